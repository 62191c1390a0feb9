"""Grading: what a check is. The bench (lab, verdict), the worker side's harness and scripted model, the checks
themselves, the runner (checks on clocks), the grade and the reports.

Imports grader.course and grader.boundary (through its interface modules, named in its docstring) and grader.errors;
the student's `rover` package is imported by the worker processes alone, never here.
"""
