"""The boundary: everything that isolates and measures student code, and knows nothing of lessons or checks.

Lives here: the side and its backends (side, backends/: bwrap, seatbelt, process), the run folder and its one
reader (runfolder, safe_files), the caps and witnesses (folder_caps, hidden_memory), clocks, processes, the zygote
and workers' plumbing (proxy on the grader's end; worker, starting, crash, linux on the side's), and the stopwatch.

Imports grader.errors only, never grading, course, classroom or commands. Whoever grades uses it through these
modules alone: side (choose, require, Boundary, in_process_note), proxy (Zygote, Worker and their ends), runfolder
(RunFolder, remove_tree), safe_files (Pinned, Refused), clocks and stopwatch (budgets and what ends them),
processes and hidden_memory (what the side holds). The workers are told which module answers requests
(grading's harness) by name, in their command line.
"""
