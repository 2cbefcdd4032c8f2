"""Settings that a light module (a benchmark file's parser) and a heavy one (the numpy code that uses them) both
take, declared here once so that neither imports the other: the significance level and a cross-validation's folds."""

from lsr_eval.settings import Setting

#: The family's significance level (lsr_eval.significance.compare).
ALPHA = Setting(help="the family's significance level", gt=0, lt=1)
DEFAULT_ALPHA = 0.05
#: K-fold cross-validation over the reported queries (lsr_eval.fusion.cross_validation), folds drawn with a seed.
FOLDS = Setting(help="folds of the cross-validation over the reported queries", ge=2, unit="folds")
FOLD_SEED = Setting(help="the seed the folds are drawn with")
DEFAULT_FOLD_SEED = 0
