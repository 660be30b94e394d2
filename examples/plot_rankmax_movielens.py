"""
Rankmax, softmax and sparsemax on MovieLens
===========================================

A recommender scores every item for a user and shows the best few. Trained on implicit
feedback — which movies a user rated, not how — it is usually fitted with the softmax
cross-entropy, which spreads probability over all items and so keeps working on items
already far down the ranking. Sparsemax (Martins & Astudillo 2016) projects the scores onto
the simplex and puts exactly zero probability on most items. Rankmax (Kong et al.,
*Rankmax: an adaptive projection alternative to the softmax function*, NeurIPS 2020)
projects onto the (n, k)-simplex with a threshold adapted to each training label: a
positive's loss only involves the items that score above it, so training concentrates on
the top of the ranking.

:class:`toprank.RankmaxRanker` is a factorised ranker, z(x) = (x·U)·Vᵀ + b, trained with
any of the three losses. This example fits it on MovieLens 100K with the implicit-feedback
protocol of the Rankmax paper (:mod:`toprank.recsys`) and compares the rankings by AP@k.
"""

# %%
# The data and the split
# ----------------------
# :func:`toprank.datasets.load_movielens_100k` gives the 100,000 ratings of 1,682 movies
# by 943 users; every rating counts as a positive. :func:`toprank.recsys.split_interactions`
# shuffles each user's movies and cuts them 80 / 10 / 10 into training, validation and
# test parts, as CSR indicator matrices. The users are the inputs, one-hot.
import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp

from toprank import RankmaxRanker
from toprank.datasets import load_movielens_100k
from toprank.recsys import evaluate_ranking, split_interactions

ratings = load_movielens_100k()
parts = split_interactions(ratings.user, ratings.item, n_users=ratings.n_users, n_items=ratings.n_items, random_state=0)
X = sp.identity(ratings.n_users, format="csr", dtype=np.float32)
print(f"{ratings.n_users} users, {ratings.n_items} movies; train {parts.train.nnz}, ", end="")
print(f"validation {parts.valid.nnz}, test {parts.test.nnz} (user, movie) pairs")

# %%
# Training with early stopping
# ----------------------------
# Rank 64 factors, Adagrad, minibatches of 64 users. The learning rates and the L2
# weight α are those the repository's benchmark (``benches/compare/movielens.py``) tuned
# on the validation AP@10 for each loss. Each fit stops when the validation AP@10 — the
# training movies excluded from the ranking — has not improved for 5 epochs, and keeps
# the best epoch's factors.
SETTINGS = {"rankmax": 0.1, "softmax": 0.1, "sparsemax": 0.03}
models = {}
for loss, learning_rate in SETTINGS.items():
    model = RankmaxRanker(
        n_components=64,
        loss=loss,
        learning_rate=learning_rate,
        alpha=1e-4,
        batch_size=64,
        n_epochs=80,
        n_iter_no_change=5,
        random_state=0,
    )
    model.fit(X, parts.train, validation_data=(X, parts.valid, parts.train))
    models[loss] = model
    print(f"{loss}: best epoch {model.best_epoch_} of {model.n_iter_}, {model.history_[-1].seconds:.1f} s")

# %%
# AP@k on the test movies
# -----------------------
# Every user's 1,682 movies are ranked with the training and validation movies excluded,
# and compared with the user's test movies. AP@k averages the precision at each rank
# ≤ k where a test movie appears; accuracy is whether the top movie is one of them.
exclude = parts.train + parts.valid
ks = [1, 2, 3, 5, 10, 20, 50]
ap = {}
for loss, model in models.items():
    scores = model.decision_function(X)
    ap[loss] = [evaluate_ranking(scores, parts.test, exclude=exclude, k_ap=k)[f"ap@{k}"] for k in ks]
    summary = evaluate_ranking(scores, parts.test, exclude=exclude)
    print(
        f"{loss:9s} AP@10 {summary['ap@10']:.3f}  accuracy {summary['accuracy']:.3f}"
        f"  Recall@100 {summary['recall@100']:.3f}"
    )
print("test AP@k   " + "".join(f"k={k:<6d}" for k in ks))
for loss, values in ap.items():
    print(f"{loss:11s} " + "".join(f"{v:<8.3f}" for v in values))

# %%
# What to look for: the paper's ordering. Rankmax leads at the very top of the ranking
# (AP@k for small k, and accuracy), softmax is close behind and closes the gap as k
# grows — it even retrieves slightly more test movies in its top 100 (Recall@100) — and
# sparsemax trails at every k.
# On the left, the validation AP@10 during training: Rankmax peaks in the fewest epochs;
# sparsemax, whose gradient is zero on every item outside the projection's support,
# learns slowest.
fig, (ax_train, ax_ap) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
for loss, model in models.items():
    epochs = [h.n_iter for h in model.history_]
    ax_train.plot(epochs, [h.val_ap for h in model.history_], label=loss)
    ax_train.plot(model.best_epoch_, max(h.val_ap for h in model.history_), "k.", ms=8)
    ax_ap.plot(ks, ap[loss], marker="o", label=loss)
ax_train.set(xlabel="epoch", ylabel="validation AP@10", title="Training (dot: best epoch)")
ax_train.legend()
ax_ap.set(xscale="log", xlabel="k", ylabel="test AP@k", title="MovieLens 100K, 943 users")
ax_ap.set_xticks(ks, [str(k) for k in ks])
ax_ap.legend()
plt.show()
