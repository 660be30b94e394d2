"""
Product quantization: compression against accuracy and speed
============================================================

Product quantization (Jégou, Douze & Schmid, TPAMI 2011) cuts each row of X into
sub-vectors, learns a k-means codebook of 256 centroids per sub-space, and stores each
sub-vector as the one-byte index of its nearest centroid. A Fashion-MNIST image — 784
float32 pixels, 3,136 bytes — becomes a few dozen bytes.

:mod:`toprank.pq` goes further than storage: a :class:`~toprank.pq.CompressedMatrix`
computes the products X̂·W and X̂ᵀ·B with the decoded matrix X̂ directly from the codes
(Harchaoui et al. 2012, §4.2), so the linear :class:`toprank.TopKSVC` trains on the codes
without ever forming X̂, and the model then predicts on raw features ("train compressed,
predict uncompressed"). This example measures what that costs in accuracy, and what it
saves in memory and time, as the number of sub-spaces varies.
"""

# %%
# The data
# --------
# The first 8,000 training images of Fashion-MNIST (10 classes; pixels scaled to [0, 1]
# by :func:`toprank.datasets.load_fashion_mnist`) train, the first 3,000 test images test.
import time

import matplotlib.pyplot as plt
import numpy as np

from toprank import TopKSVC
from toprank.datasets import load_fashion_mnist
from toprank.pq import ProductQuantizer

train, test = load_fashion_mnist(subset="train"), load_fashion_mnist(subset="test")
X_train, y_train = train.data[:8000].astype(np.float32), train.target[:8000]
X_test, y_test = test.data[:3000].astype(np.float32), test.target[:3000]
print(f"train {X_train.shape}, test {X_test.shape}; {X_train.nbytes / 2**20:.1f} MiB of float32")

# %%
# The reference: a top-1 SVM (Crammer–Singer) trained on the raw pixels.
C = 0.01
started = time.perf_counter()
raw = TopKSVC(C=C, random_state=0).fit(X_train, y_train)
raw_seconds = time.perf_counter() - started
raw_accuracy = raw.score(X_test, y_test)
print(f"raw: test accuracy {100 * raw_accuracy:.1f} %, fit {raw_seconds:.2f} s ({raw.n_iter_} epochs)")


# %%
# Compress, train on the codes, test two ways
# -------------------------------------------
# For 4 to 49 sub-spaces (196 to 16 pixels per code), a
# :class:`~toprank.pq.ProductQuantizer` learns the codebooks and ``compress`` returns the
# :class:`~toprank.pq.CompressedMatrix`; its ``codes`` hold one byte per sub-space and
# row. The model trained on it is tested on the raw test images and on their codes. The
# product X̂ᵀ·B that the solver's duality-gap checks need is timed from the codes and, for
# comparison, with NumPy on the decoded float32 matrix (best of five).
def best_of(repeat, function):
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


B = np.random.default_rng(0).standard_normal((len(X_train), 10)).astype(np.float32)
rows = []
for n_subspaces in (4, 8, 16, 49):
    quantizer = ProductQuantizer(n_subspaces=n_subspaces, n_iter=10, random_state=0).fit(X_train)
    X_codes = quantizer.compress(X_train)
    started = time.perf_counter()
    model = TopKSVC(C=C, random_state=0).fit(X_codes, y_train)
    fit_seconds = time.perf_counter() - started
    decoded = np.asarray(X_codes)  # X̂ in float32, only for the comparison
    rows.append(
        {
            "n_subspaces": n_subspaces,
            "ratio": X_train.nbytes / X_codes.codes.nbytes,
            "test raw": model.score(X_test, y_test),
            "test codes": model.score(quantizer.compress(X_test), y_test),
            "fit seconds": fit_seconds,
            "from codes": best_of(5, lambda m=X_codes: m.T.dot(B)),
            "numpy decoded": best_of(5, lambda m=decoded: m.T @ B),
        }
    )
    print(X_codes)  # its memory against the dense matrix

print("sub-spaces  smaller  test raw  test codes  fit (s)  X̂ᵀB from codes (ms)  NumPy on X̂ (ms)")
for r in rows:
    print(
        f"{r['n_subspaces']:>10d}  {r['ratio']:>6.0f}x  {100 * r['test raw']:>7.1f}%  {100 * r['test codes']:>9.1f}%"
        f"  {r['fit seconds']:>7.2f}  {1e3 * r['from codes']:>20.2f}  {1e3 * r['numpy decoded']:>15.2f}"
    )

# %%
# What the compression costs and saves
# ------------------------------------
# What to look for, left: accuracy falls as the codes get coarser (more pixels per
# code), and the code-trained model tested on the raw images is at least as accurate as
# tested on codes — the model of X̂ transfers to X. With a few dozen bytes per image it
# comes within about a point of the model trained on the raw pixels. (The ratio counts
# the codes only: the codebooks, 256 centroids per sub-space, are a fixed 0.8 MB that
# the printed summaries show, small against the codes once there are many more rows.)
#
# Right: from the codes, X̂ᵀ·B adds each row of B into the bucket of its code in every
# sub-space, then multiplies the 256 centroids of each sub-space by their bucket sums —
# far less arithmetic than the n × d products of the dense matrix, the more so the
# fewer sub-spaces, so the bars from the codes are the shorter ones. The fits on codes
# take about as long as the raw one, since the solver decodes each row as it reads it.
ratios = [r["ratio"] for r in rows]
fig, (ax, ax_time) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
ax.plot(ratios, [100 * r["test raw"] for r in rows], "o-", label="trained on codes, tested on raw images")
ax.plot(ratios, [100 * r["test codes"] for r in rows], "s--", label="trained and tested on codes")
ax.axhline(100 * raw_accuracy, color="k", ls=":", label="trained and tested on raw images")
for r in rows:
    ax.annotate(
        f"{r['n_subspaces']} sub-spaces",
        (r["ratio"], 100 * r["test raw"]),
        fontsize=8,
        xytext=(4, 4),
        textcoords="offset points",
    )
lowest = min(min(r["test raw"], r["test codes"]) for r in rows)
ax.set(xscale="log", xlabel="memory of X: raw float32 / codes", ylabel="test accuracy (%)", title="Fashion-MNIST")
ax.set_ylim(100 * lowest - 2.5, 100 * raw_accuracy + 0.5)
ax.set_xticks(ratios, [f"{r:.0f}×" for r in ratios])
ax.minorticks_off()
ax.legend(loc="lower left", fontsize=8)

width = 0.35
positions = np.arange(len(rows))
ax_time.bar(positions - width / 2, [1e3 * r["from codes"] for r in rows], width, label="X̂ᵀ·B from the codes")
ax_time.bar(positions + width / 2, [1e3 * r["numpy decoded"] for r in rows], width, label="NumPy on decoded X̂")
ax_time.set_xticks(positions, [f"{r['n_subspaces']}" for r in rows])
ax_time.set(xlabel="sub-spaces", ylabel="milliseconds (best of 5)", title="X̂ᵀ·B, 8,000 × 784 by 10 columns")
ax_time.legend()
plt.show()
