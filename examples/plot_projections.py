"""
The projections in three dimensions
===================================

Top-k learners are built on Euclidean projections onto a few convex sets: the dual step of
the top-k SVM projects onto the *top-k simplex*, Rankmax onto the *(n, k)-simplex*,
sparsemax onto the *simplex*. :mod:`toprank.projections` computes each one exactly. In
three dimensions the sets can be drawn, and so can what a projection does: it moves a
point to the nearest point of the set, along a segment orthogonal to the face it lands
on.

The sets, for x ∈ ℝ³:

* the simplex, p ≥ 0, Σp = 1 (:func:`~toprank.projections.simplex`);
* the top-k cone, 0 ≤ p_i ≤ Σp / k (:func:`~toprank.projections.topk_cone`): no
  coordinate may carry more than a k-th of the total;
* the top-k simplex, the top-k cone with Σp ≤ 1 (:func:`~toprank.projections.topk_simplex`),
  the dual set of the top-k hinge loss;
* the capped simplex or (n, k)-simplex, 0 ≤ p ≤ 1, Σp = k
  (:func:`~toprank.projections.capped_simplex`).
"""

# %%
# Points and their projections
# ----------------------------
# Ten seeded random points are projected onto each set with k = 2; the check below
# confirms that every output satisfies its set's constraints to rounding.
import matplotlib.pyplot as plt
import numpy as np
from mpl_toolkits.mplot3d.art3d import Poly3DCollection

from toprank import projections

rng = np.random.default_rng(0)
points = rng.normal(loc=0.35, scale=0.45, size=(10, 3))

k = 2
outputs = {
    "simplex": projections.simplex(points),
    f"top-k cone (k={k})": projections.topk_cone(points, k=k),
    f"top-k simplex (k={k})": projections.topk_simplex(points, k=k),
    f"capped simplex (k={k})": projections.capped_simplex(points, k=k),
}
# How far each output is outside its set (0 up to rounding): the lower bound p ≥ 0,
# the upper bound (Σp/k, or 1 for the capped simplex), and the sum (= 1, ≤ 1 or = k).
for name, p in outputs.items():
    total = p.sum(axis=1)
    cap = 1.0 if name.startswith("capped") else total[:, None] / k if name.startswith("top-k") else np.inf
    sum_error = {
        "simplex": np.abs(total - 1),
        "top-k cone": np.zeros_like(total),
        "top-k simplex": np.maximum(total - 1, 0),
        "capped simplex": np.abs(total - k),
    }[name.split(" (")[0]]
    violation = max(0.0, float(-p.min()), float((p - cap).max()), float(sum_error.max()))
    print(f"{name:22s} Σp from {total.min():.3f} to {total.max():.3f}; largest violation {violation:.1e}")


# %%
# The sets are polytopes (or, for the cone, a polyhedral cone drawn up to Σp = 1.5); their
# faces are listed by their vertices.
e = np.eye(3)
half = np.array([[0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.5, 0.5]])  # p_i = Σp/2 on two faces
origin = np.zeros(3)
faces = {
    "simplex": [e],
    f"top-k cone (k={k})": [
        [origin, 1.5 * a, 1.5 * b] for a, b in ((half[0], half[1]), (half[1], half[2]), (half[2], half[0]))
    ],
    f"top-k simplex (k={k})": [half]
    + [[origin, a, b] for a, b in ((half[0], half[1]), (half[1], half[2]), (half[2], half[0]))],
    f"capped simplex (k={k})": [1.0 - e],
}

# %%
# What to look for: a point already inside a set stays where it is; the others land on a
# face, an edge or a vertex, each along the shortest segment. The simplex and the capped
# simplex are flat triangles (Σp is fixed); the top-k simplex is the solid tetrahedron
# between the origin and the triangle of points with two coordinates at ½, so points
# with negative coordinates are pulled to its lower faces, and a point with one
# dominant coordinate is pulled to the face where that coordinate equals the sum of the
# others — the top-k constraint at work.
fig = plt.figure(figsize=(10, 9), layout="constrained")
for i, (name, p) in enumerate(outputs.items()):
    ax = fig.add_subplot(2, 2, i + 1, projection="3d")
    ax.add_collection3d(Poly3DCollection(faces[name], alpha=0.25, facecolor="C0", edgecolor="C0"))
    ax.scatter(*points.T, color="C1", s=18, label="x")
    ax.scatter(*p.T, color="C3", s=18, label="projection")
    for x, q in zip(points, p):
        ax.plot(*np.stack([x, q]).T, color="grey", lw=0.8)
    ax.set(xlim=(-0.4, 1.4), ylim=(-0.4, 1.4), zlim=(-0.4, 1.4), xlabel="p₀", ylabel="p₁", zlabel="p₂", title=name)
    ax.view_init(elev=22, azim=35)
    ax.tick_params(labelsize=7)
fig.axes[0].legend(loc="upper left", fontsize=9)
plt.show()

# %%
# Softmax, sparsemax and Rankmax along a line of scores
# -----------------------------------------------------
# The losses of :mod:`toprank.losses` map scores z to probabilities: softmax is the
# entropic projection onto the simplex (:func:`~toprank.projections.capped_simplex_entropy`
# with k = 1), sparsemax the Euclidean one, and Rankmax (:func:`~toprank.projections.rankmax`)
# an adaptive projection onto the (n, k)-simplex whose threshold depends on the true label
# y: it keeps y in the support whatever its rank. Here z = (t, 1, 0.5, 0) for t from −2 to
# 3, with y = 3, the label of the lowest fixed score.
ts = np.linspace(-2, 3, 201)
Z = np.column_stack([ts, np.ones_like(ts), np.full_like(ts, 0.5), np.zeros_like(ts)])
maps = {
    "softmax": projections.capped_simplex_entropy(Z, k=1),
    "sparsemax": projections.sparsemax(Z),
    "Rankmax (y = 3, k = 1)": projections.rankmax(Z, np.full(len(Z), 3), k=1),
}
for name, P in maps.items():
    print(f"{name:24s} entries exactly zero: {np.mean(P == 0):.0%}; p_3 = 0 at {np.mean(P[:, 3] == 0):.0%} of the t")

# %%
# What to look for: softmax never reaches zero. Sparsemax sets the scores more than a
# unit below the top to exactly zero — here p_3 is zero along the whole line, and once
# t is a unit above z_1 the first coordinate takes everything. Rankmax puts its
# threshold η = 1 below the lower of z_y and the k-th largest score, so the true label
# y = 3 and everything scored above it keep positive mass along the whole line, at
# whatever rank y stands.
fig, axes = plt.subplots(1, 3, figsize=(12, 3.4), sharey=True, layout="constrained")
for ax, (name, P) in zip(axes, maps.items()):
    for j, label in enumerate(["z_0 = t", "z_1 = 1", "z_2 = 0.5", "z_3 = 0 (y)"]):
        ax.plot(ts, P[:, j], label=f"p_{j}, {label}")
    ax.set(title=name, xlabel="t")
axes[0].set_ylabel("probability")
axes[0].legend(fontsize=8)
plt.show()
