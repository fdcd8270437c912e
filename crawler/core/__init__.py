"""The functional core: pure functions and plain data, no I/O: URLs, robots.txt, what a
page says, the decisions, and the records that cross a pipe or a file."""
