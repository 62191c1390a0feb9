"""One module per `workshop` command: each parses its options and calls plain functions.

Commands may import every other package here; nothing imports commands but grader.cli.
"""
