"""Grading: the sandboxed runner, the worker that hosts student code, the checks and the reports.

Imports grader.course only; the student's `rover` package is imported by the worker alone.
"""
