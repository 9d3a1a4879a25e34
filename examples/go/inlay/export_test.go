package inlay

// SetWatcherHook lets the tests see when a context's watcher goroutine has cancelled a
// call (nil: nothing).
func SetWatcherHook(f func()) { watcherCancelled = f }
