"""Grading: the runner and its sandbox (runner, proxy, sandbox), the worker side (worker, harness, scripted), the Lab
checks are written against, the checks themselves and the reports.

Imports grader.course only; the student's `rover` package is imported by the worker processes alone, never here.
"""
