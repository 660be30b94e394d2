"""
The trace-norm path: rank and accuracy against λ
================================================

Multinomial logistic regression over m classes learns a d × m weight matrix W. With many
classes, W has many more parameters than the classes have independent directions, and a
penalty on its *trace norm* ‖W‖_σ,1 — the sum of its singular values — makes it low-rank,
as an ℓ1 penalty makes a vector sparse (Harchaoui et al., *Large-scale image classification
with trace-norm regularization*, CVPR 2012):

.. math::

    J(W, b) = \\lambda_1 \\|W\\|_{\\sigma,1} + \\lambda_2 \\|W\\|_F^2
              + \\frac{1}{n} \\sum_i \\log \\sum_l \\exp(s_{il} - s_{iy_i}).

:func:`toprank.tracenorm_path` fits :class:`toprank.TraceNormLogisticRegression` along a
decreasing sequence of λ1, each fit warm-started from the previous one. This example walks
that path on the Flavia leaves (32 species, 50 shape features) and shows how the rank of W
and the validation accuracy move with λ1.
"""

# %%
# The data
# --------
# :func:`toprank.datasets.load_flavia` gives 1,907 leaves. A stratified 60 / 20 / 20 split
# makes training, validation and test sets; the features are standardised on the
# training part.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from toprank import tracenorm_path
from toprank.datasets import load_flavia
from toprank.metrics import top_k_accuracy

flavia = load_flavia()
X_train, X_rest, y_train, y_rest = train_test_split(
    flavia.data, flavia.target, train_size=0.6, stratify=flavia.target, random_state=0
)
X_val, X_test, y_val, y_test = train_test_split(X_rest, y_rest, train_size=0.5, stratify=y_rest, random_state=0)
scaler = StandardScaler().fit(X_train)
X_train, X_val, X_test = scaler.transform(X_train), scaler.transform(X_val), scaler.transform(X_test)
n_classes = len(np.unique(y_train))
print(f"train {X_train.shape}, validation {X_val.shape}, test {X_test.shape}, {n_classes} classes")

# %%
# Where the path starts
# ---------------------
# W = 0 (with the intercepts at the log class priors) is optimal for every λ1 at least
# the spectral norm of the loss's gradient there, ‖Xᵀ(P − Y)‖₂ / n, with P the class
# priors repeated on every row and Y the one-hot labels. The path runs over 12 values of
# λ1 from just below that value down to a thousandth of it.
Y = np.eye(n_classes)[y_train]
lambda_max = np.linalg.norm(X_train.T @ (Y.mean(axis=0) - Y) / len(X_train), 2)
lambdas = lambda_max * np.geomspace(0.9, 1e-3, 12)
print(f"λ1 from {lambdas[0]:.3g} to {lambdas[-1]:.3g}")

# %%
# The path
# --------
# ``validation_data`` makes each point report its top-1 and top-5 accuracy on the
# validation set; each :class:`~toprank.tracenorm.PathPoint` also carries the fitted
# model, its rank and its time.
path = tracenorm_path(X_train, y_train, lambdas, lambda_fro=1e-5, validation_data=(X_val, y_val), random_state=0)
print("λ1        rank  iterations  seconds  validation top-1  top-5")
for point in path:
    print(
        f"{point.lambda_trace:<9.3g} {point.rank:>4d}  {point.n_iter:>10d}  {point.seconds:>7.2f}"
        f"  {100 * point.validation_topk[1]:>16.1f}  {100 * point.validation_topk[5]:>5.1f}"
    )

# %%
# The model the validation set prefers is kept and scored once on the test set.
best = max(path, key=lambda point: point.validation_topk[1])
test_scores = best.model.decision_function(X_test)
print(
    f"kept λ1 = {best.lambda_trace:.3g}: rank {best.rank} of at most {min(X_train.shape[1], n_classes)}, "
    f"test top-1 {100 * top_k_accuracy(y_test, test_scores, 1):.1f} %, "
    f"top-5 {100 * top_k_accuracy(y_test, test_scores, 5):.1f} %"
)

# %%
# Rank and accuracy against λ1
# ----------------------------
# Read the plots from right to left, as the path runs. What to look for: the rank grows
# step by step as λ1 falls, and the validation accuracy rises steeply over the first
# ranks, then levels off well before W reaches full rank (32 here, the number of
# classes) — the low-rank models of the middle of the path are as accurate as the
# nearly unregularised ones at the left end. The right panel shows the singular values of
# the kept model's W, drawn out to the largest possible rank: they decay steadily, and
# the penalty has set the last ones to exactly zero.
fig, (ax_rank, ax_sv) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
lams = [p.lambda_trace for p in path]
ax_rank.plot(lams, [p.rank for p in path], "k-o", label="rank of W")
ax_rank.set(xscale="log", xlabel="λ1 (trace-norm weight)", ylabel="rank of W", title="Flavia, 32 classes")
ax_acc = ax_rank.twinx()
ax_acc.plot(lams, [100 * p.validation_topk[1] for p in path], "C0-s", label="validation top-1")
ax_acc.plot(lams, [100 * p.validation_topk[5] for p in path], "C1-^", label="validation top-5")
ax_acc.axvline(best.lambda_trace, color="grey", ls=":", label="kept λ1")
ax_acc.set_ylabel("validation accuracy (%)")
lines = ax_rank.get_legend_handles_labels()
more = ax_acc.get_legend_handles_labels()
ax_acc.legend(lines[0] + more[0], lines[1] + more[1], loc="center left")

singular_values = best.model.singular_values_
full_rank = min(X_train.shape[1], n_classes)
ax_sv.bar(np.arange(1, len(singular_values) + 1), singular_values)
ax_sv.set_xlim(0, full_rank + 1)
ax_sv.set(xlabel="index", ylabel="singular value", title=f"singular values of W at the kept λ1 (rank {best.rank})")
plt.show()
