"""The I/O shell: the loop, HTTP, worker processes, the state file, the journal of
decisions, politeness and progress. Everything here waits on or writes to something."""
