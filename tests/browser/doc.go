// Package browser tests the chat page that the server serves at / in a
// real browser: Debian's chromium, driven through the DevTools protocol by
// github.com/chromedp/chromedp (pure Go, no Node or WebDriver server).
//
// It is its own module so that the library's go.mod stays free of the
// browser driver. The test starts the server on loopback with the tiny
// committed Qwen2 model (random weights: its text is gibberish, which is
// all a page needs) and skips, naming the install command, only where
// chromium is absent. `go test -update` rewrites the screenshots in
// docs/screenshots.
package browser
