"""One module per backend of the boundary (grader.boundary.side says what each one is): bwrap, seatbelt, process;
and linux_proc, the Linux figures and paths read from /proc that psutil has no call for."""
