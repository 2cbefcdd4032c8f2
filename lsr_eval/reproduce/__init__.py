"""Two-click reproduction: ``lsr-eval reproduce`` reruns committed results from their manifests and checks them.

Data flow: a result folder (:mod:`.results`) -> a rerunnable job of its kind (:mod:`.jobs`; :mod:`.benchmark`,
:mod:`.stage`, :mod:`.training`, :mod:`.pipeline`, :mod:`.derived`), after checking its data and model
(:mod:`.checks`) and estimating its time (:mod:`.estimate`) -> the rerun in a fresh folder -> every recorded value
compared under the rule of its kind (:mod:`.tolerance`, :mod:`.compare`) -> one line per row, and the regression
matrix of every result on this machine (:mod:`.matrix`, :mod:`.machine`).
"""
