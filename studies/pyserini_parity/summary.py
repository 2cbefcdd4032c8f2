"""The parity study's files (studies/pyserini_parity/run.py): the per-query CSV and the summary, which
tests/integration/test_committed_results.py makes again from a committed ``parity.json``."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Sequence

from studies.pyserini_parity.measure import TOP, first_change


def write_per_query(path: Path, qids: Sequence[str], runs, per_query) -> None:
    """Per query: nDCG@10 of both paths, top-10 overlap, and the first ablation step that changed its top-10 set."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["qid", "ndcg10_pyserini", "ndcg10_lsr_eval", "top10_overlap", "same_top10_set", "first_step"])
        for q in qids:
            a, b = set(list(runs["pyserini"][q])[:TOP]), set(list(runs["lsr-eval"][q])[:TOP])
            w.writerow([q, f"{per_query['pyserini'].get(q, 0.0):.4f}", f"{per_query['lsr-eval'].get(q, 0.0):.4f}",
                        len(a & b), int(a == b), first_change(runs, q) or ""])


def summary_md(r: dict) -> str:
    n, e, v = r["queries"], r["end_to_end_top10"], r["vectors"]
    lines = [f"# Parity with Pyserini on the same weights ({r['system']}, {r['dataset']['name']}, {n} queries, "
             f"k={r['k']})", "",
             "| path | nDCG@10 | same top-10 set as Pyserini |", "|---|---|---|",
             f"| Pyserini {r['pyserini']['version']} | {r['nDCG@10']['pyserini']:.4f} | |",
             f"| lsr-eval | {r['nDCG@10']['lsr_eval']:.4f} | {e['same_top10_set']}/{n} |", "",
             f"nDCG@10 difference {r['nDCG@10']['difference']:+.4f} (target within 0.002: "
             f"{'met' if r['nDCG@10']['within_target'] else 'missed'}); identical top-10 sets on "
             f"{e['same_top10_set']}/{n} = {e['fraction']:.1%} of queries (target 95%: "
             f"{'met' if e['within_target'] else 'missed'}).", "",
             "## Vectors: lsr-eval's floats quantised Pyserini's way (round(w / 5 * 256), specials kept) against "
             "Pyserini's integers", ""]
    for what in ("documents", "queries"):
        c = v[what]
        lines.append(f"* {what}: {c['equal_integer_vectors']}/{c['compared']} identical integer vectors; "
                     f"{c['differing_entries']} differing entries of {c['entries']} (max |difference| "
                     f"{c['max_abs_integer_difference']}, {c['differing_entries_within_0.001_of_a_half']} of them "
                     f"within 0.001 of a .5 boundary); float vectors bit-identical on {c['equal_float_vectors']}/"
                     f"{c['compared']}, {c['float_entries_differing']} float entries differ, by at most "
                     f"{c['max_abs_float_difference']:.2e}")
    sp = r["special_token_entries"]
    lines.append(f"* special tokens with a positive integer weight: Pyserini documents {sp['pyserini_documents']}, "
                 f"queries {sp['pyserini_queries']}; lsr-eval (specials kept) documents {sp['lsr_eval_documents']}, "
                 f"queries {sp['lsr_eval_queries']}")
    lines.append(f"* tokenisation: identical input ids for {v['tokenisation_identical_documents']}/"
                 f"{v['documents_compared']} documents (Pyserini strips title and text before joining)")
    for what in ("documents", "queries"):
        for d in v[what]["differences"][:10]:
            lines.append(f"  * {what[:-1]} {d['id']} `{d['term']}`: lsr-eval {d['lsr_eval']} "
                         f"(w/5*256 = {d['lsr_eval_scaled']:.6f}), Pyserini {d['pyserini']} "
                         f"({d['pyserini_scaled']:.6f})")
    lines += ["", "## Ablation: from Pyserini's path to lsr-eval's, one change at a time", "",
              "| step | change | nDCG@10 | same top-10 set as previous step | identical runs (all hits / hits "
              "with score > 0) |", "|---|---|---|---|---|",
              f"| pyserini | {r['steps'][0]['description']} | {r['metrics']['pyserini']['nDCG@10']:.4f} | | |"]
    for step, a in zip(r["steps"][1:], r["ablation"]):
        lines.append(f"| {step['name']} | {step['description']} | {a['nDCG@10_to']:.4f} | "
                     f"{a['same_top10_set']}/{n} | {a['identical_runs']}/{n} / "
                     f"{a['identical_positive_score_hits']}/{n} |")
    f = r["idf_filter"]
    c = r["lsr_eval_checks"]
    fa = r["float_ranking_top10_same_set"]
    dq = fa["differing_queries_agreeing_with"]
    lines += ["", "Idf filter (Pyserini keeps a query term only if it is in the index with idf = log(N/df) > 0): "
              "terms in every document " + "; ".join(
                  f"{k}: {', '.join(x['terms_at_idf_0']) or 'none'} ({x['query_terms_removed']} query terms removed, "
                  f"absent from the index)" for k, x in f.items()) + ".",
              f"Exact float ranking (float query . float document vectors, no quantisation, specials dropped): same "
              f"top-10 set as Pyserini (scale 51.2) on {fa['pyserini']}/{n} queries, as lsr-eval (scale 100) on "
              f"{fa['lsr-eval']}/{n}; of the {len(r['differing_queries_explained'])} queries where the two differ, it "
              f"agrees with lsr-eval on {dq['lsr-eval']}, with Pyserini on {dq['pyserini']}, with neither on "
              f"{dq['neither']}.",
              f"Pyserini keeps weights that round to 0: {r['pyserini']['zero_weight_document_entries']} document "
              f"entries, {r['pyserini']['zero_weight_query_terms']} query terms (no posting, no score).",
              f"lsr-eval's caps: cached encoding equals the full one with specials dropped and top-"
              f"{r['settings']['doc_top_k']}: {c['cached_equals_full_sparsified']} ({c['documents_over_doc_top_k']} "
              f"documents over the cap); queries: longest {c['max_tokens']} tokens "
              f"({c['queries_over_lsr_eval_max_length']} over lsr-eval's {c['lsr_eval_max_length']}), "
              f"{c['queries_over_query_top_k']} over top-{r['settings']['query_top_k']} terms; the benchmark's query "
              f"maps equal the uncapped ones at scale 100 for {c['benchmark_query_maps_equal_uncapped_scale_100']}/"
              f"{n} queries.", "",
              "## Every query whose top-10 set differs (Pyserini vs lsr-eval)", "",
              "| qid | first step | only in Pyserini's top 10 (rank P / rank L, float score) | only in lsr-eval's "
              "(rank P / rank L, float score) | float top 10 equals |", "|---|---|---|---|---|"]

    def cell(docs):
        return "; ".join(f"{d['doc']} ({d['rank_pyserini']} / {d['rank_lsr_eval']}, {d['float_score']:.4f})"
                         for d in docs)

    for x in r["differing_queries_explained"]:
        lines.append(f"| {x['qid']} | {x['first_step']} | {cell(x['only_pyserini'])} | {cell(x['only_lsr_eval'])} | "
                     f"{', '.join(x['float_top10_equals']) or 'neither'} |")
    lines += ["", "Float score: dot product of lsr-eval's float query and document vectors without special tokens "
              "(what both quantisations approximate). Rank P / rank L: rank in Pyserini's / lsr-eval's run. Every "
              "differing query swaps documents at the top-10 boundary whose float scores are within a fraction of a "
              "percent: integer scores at scale 51.2 (Pyserini) and 100 (lsr-eval) round them differently.", "",
              f"Machine shared with other jobs ({r['machine']['cores']} cores); {r['seconds'] / 60:.1f} min in all. "
              "Script: pipelines/parity_pyserini.py; figures: parity.json, per_query.csv.", ""]
    return "\n".join(lines)


def summaries(folder: Path) -> dict[str, str]:
    """The summary of a results folder of studies/pyserini_parity/run.py, made again from its raw file
    (``parity.json``): what tests/integration/test_committed_results.py compares with the committed one
    (``per_query.csv`` comes from the runs, which are not kept)."""
    return {"summary.md": summary_md(json.loads((folder / "parity.json").read_text(encoding="utf-8")))}
