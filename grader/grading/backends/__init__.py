"""One module per backend of the boundary (grader.grading.boundary says what each one is): bwrap, seatbelt, process."""
