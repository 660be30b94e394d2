"""
Multi-label rankings on yeast: the rank loss of MultiLabelSVC
=============================================================

A multi-label model that ranks the labels of each example is judged by its *rank loss*:
the fraction of (relevant, irrelevant) label pairs that it orders wrongly.
:class:`toprank.MultiLabelSVC` trains a linear label ranking with the multi-label losses
of Lapin, Hein & Schiele (TPAMI 2018): the hinge max{0, 1 + max_{l∉Y} s_l − min_{j∈Y} s_j},
which only looks at the worst (relevant, irrelevant) pair, its Moreau-smoothed version,
and the softmax cross-entropy, which weighs every label. This example compares them on
the yeast gene-function data with one-vs-rest logistic regression.
"""

# %%
# The data
# --------
# :func:`toprank.datasets.load_yeast`: 2,417 genes, 103 features, 14 labels, about four
# labels per gene. A seeded 1,500 / 917 split; features standardised on the training
# part.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier
from sklearn.preprocessing import StandardScaler

from toprank import MultiLabelSVC
from toprank.datasets import load_yeast
from toprank.metrics import precision_at_k, rank_loss

yeast = load_yeast()
order = np.random.default_rng(0).permutation(yeast.data.shape[0])
train, test = order[:1500], order[1500:]
scaler = StandardScaler().fit(yeast.data[train])
X_train, X_test = scaler.transform(yeast.data[train]), scaler.transform(yeast.data[test])
Y_train, Y_test = yeast.target[train], yeast.target[test]
print(f"train {X_train.shape}, test {X_test.shape}, {Y_train.shape[1]} labels, {Y_train.sum(1).mean():.2f} per gene")

# %%
# The models
# ----------
# The values of C are those that 5-fold cross-validation of the rank loss chose for each
# model on this split in the repository's benchmark (``benches/compare/multilabel_real.py``).
# Every MultiLabelSVC example needs a relevant and an irrelevant label: yeast's genes
# all have both.
models = {
    "hinge": MultiLabelSVC(loss="hinge", C=0.001, random_state=0),
    "smoothed hinge (γ = 1)": MultiLabelSVC(loss="hinge", smoothing=1.0, C=0.01, random_state=0),
    "softmax": MultiLabelSVC(loss="softmax", C=0.1, random_state=0),
    "one-vs-rest logistic": OneVsRestClassifier(LogisticRegression(C=0.01, max_iter=1000)),
}
scores = {}
for name, model in models.items():
    model.fit(X_train, Y_train)
    scores[name] = model.decision_function(X_test)
    status = f", {model.status_} after {model.n_iter_} epochs" if hasattr(model, "status_") else ""
    print(
        f"{name:24s} rank loss {rank_loss(Y_test, scores[name]):.4f}  P@1 {precision_at_k(Y_test, scores[name], 1):.3f}"
        f"  score spread {np.std(scores[name], axis=1).mean():.3f}{status}"
    )

# %%
# Rank loss, overall and by the size of the label set
# ---------------------------------------------------
# What to look for, left: the plain hinge is far behind the others. On noisy data like
# yeast its optimum is the all-ties model — W = 0 and equal scores, the *score spread*
# printed above is about zero — because at W = 0 every pair of an example is its worst
# pair at once, and some mixture of them cancels out. Smoothing spreads each example's
# weight over the pairs near the worst one, the softmax weighs every label, and both rank
# well. Right: split by the number of relevant labels, the multi-label losses do well on
# genes with few labels, and one-vs-rest, which gives every (gene, label) the full weight
# of its own binary problem, on genes with many.
sizes = Y_test.sum(axis=1)
groups = {"1–2": sizes <= 2, "3": sizes == 3, "4": sizes == 4, "≥ 5": sizes >= 5}
fig, (ax, ax_size) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
names = list(scores)
ax.barh(names, [rank_loss(Y_test, scores[name]) for name in names], color=[f"C{i}" for i in range(len(names))])
ax.invert_yaxis()
ax.set(xlabel="test rank loss (lower is better)", title="yeast, 14 labels")
width = 0.8 / len(names)
for i, name in enumerate(names):
    values = [rank_loss(Y_test[rows], scores[name][rows]) for rows in groups.values()]
    ax_size.bar(np.arange(len(groups)) + (i - (len(names) - 1) / 2) * width, values, width, label=name, color=f"C{i}")
ax_size.set_xticks(np.arange(len(groups)), [f"{g}\n({m.sum()} genes)" for g, m in groups.items()])
ax_size.set(xlabel="relevant labels per gene", ylabel="test rank loss", title="by the size of the label set")
ax_size.margins(y=0.3)
ax_size.legend(fontsize=8, ncol=2, loc="upper center")
plt.show()
