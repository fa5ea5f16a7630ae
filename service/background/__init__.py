"""Work that happens after a request, or at a time: the feed's consumers and the timers."""
