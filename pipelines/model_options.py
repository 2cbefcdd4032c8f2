"""Re-exports :mod:`lsr_eval.models.arguments` for pipelines/bench_query_path.py until it imports the library."""

from lsr_eval.models.arguments import add_device, add_precision, encoder_record, in_precision  # noqa: F401
