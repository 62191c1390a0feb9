"""workshop: the course kit behind Rover. The `workshop` command lives in grader.cli."""
