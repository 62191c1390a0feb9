"""workshop: the course kit behind Rover. The `workshop` command lives in grader.cli."""
import time

STARTED = time.monotonic()  # about when the `workshop` process began: the first of the kit it imports
