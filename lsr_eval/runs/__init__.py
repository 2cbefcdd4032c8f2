"""Runs: TREC run files (read, write) in trec_eval's ranking order."""

from lsr_eval.runs.trec import hits_arrays, read_run, trec_order, trec_ranking, write_run

__all__ = ["hits_arrays", "read_run", "trec_order", "trec_ranking", "write_run"]
