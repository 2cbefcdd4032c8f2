"""Measurement studies beside the toolkit: each folder is one study (its run.py, its summary, a README); they
import lsr_eval, never the other way round."""
