"""Transcripts of Rover's runs: read and validated (load), split into per-block tokens (chart), drawn as a page (page).

Imports nothing else of the kit's; commands import it.
"""
