# Sourced (with SCIFACT and WORK set) by the SciFact training pipelines: BM25's top 100 of every SciFact train query,
# their hard negatives, made once in BM25=$WORK/bm25-scifact-train. LSR_EVAL overrides the command.
BM25=$WORK/bm25-scifact-train
[ -s "$BM25/run.trec" ] || \
    ${LSR_EVAL:-lsr-eval} bm25 "$SCIFACT" --split train --hits 100 --out "$BM25" --work-dir "$WORK"
