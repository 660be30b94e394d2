"""Docstring text that several public functions share, written once.

A docstring names a shared fragment by a line holding only ``%(name)s``;
:func:`fill_doc` puts the fragment there, each of its lines indented like the
placeholder, when the module is imported (the way SciPy's ``doccer`` and MNE's
``fill_doc`` do). A fragment may itself hold placeholders. Only text that is the same
word for word in several docstrings lives here; a function's summary, Notes and Examples
stay in its own docstring. An unknown name raises ``KeyError`` at import, so a typo
cannot reach the rendered documentation.
"""

from __future__ import annotations

import re
from typing import TypeVar

_T = TypeVar("_T")

# A placeholder fills its whole line; ``%(`` is never otherwise used in a docstring.
_PLACEHOLDER = re.compile(r"^([ \t]*)%\((\w+)\)s[ \t]*$", re.MULTILINE)


def _rows_invalid(name: str) -> str:
    """The InvalidInputError entry of a function on a 1-D or 2-D float array ``name``."""
    return f"""\
InvalidInputError
    ``{name}`` empty, not 1-D or 2-D, of an integer, bool or complex dtype, or with NaN
    or infinite entries; ``n_jobs`` not an integer, ``0`` or out of range."""


def _torch_scores(name: str) -> str:
    """The entry of a toprank.torch function's scores argument ``name``."""
    return f"""\
{name} : torch.Tensor of float32 or float64, shape (..., m)
    Scores; each index of the leading dimensions is a row."""


FRAGMENTS: dict[str, str] = {
    # toprank.projections
    "topk_k": """\
k : int
    ``1 <= k <= m``.""",
    "projection_x": """\
x : array_like of float32 or float64, shape (m,) or (n, m)
    The vector to project, or a batch of n rows projected independently (in
    parallel). float32 stays float32; the thresholds are computed in float64.""",
    "projection_n_jobs": """\
n_jobs : int or None, default None
    Threads for a 2-D ``x``: ``None`` one, ``-1`` all cores, ``-2`` all but one.""",
    "projection_r_rho": """\
r : float, default 1.0
    The bound on the sum, finite and ``>= 0``.
rho : float, default 0.0
    The weight of the bias term, finite and ``>= 0``.
%(projection_n_jobs)s""",
    "projection_returns": """\
ndarray
    The projection p, a new array of ``x``'s shape and dtype.""",
    "projection_invalid_x": _rows_invalid("x"),
    "projection_invalid_z": _rows_invalid("z"),
    "projection_returns_raises": """\
Returns
-------
%(projection_returns)s

Raises
------
%(projection_invalid_x)s""",
    "projection_no_solution": """\
NoSolutionError
    The exact search found no solution within its rounding bounds (never seen on
    finite input; raised rather than returning a wrong answer).""",
    "projection_example_x": """\
>>> import numpy as np
>>> x = np.array([0.5, 1.2, -0.3, 0.9])""",
    "capped_simplex_sections": """\
Parameters
----------
%(projection_x)s
k : float
    The required sum, ``0 < k <= m``.
%(projection_n_jobs)s

%(projection_returns_raises)s
    Also ``k`` outside (0, m].
%(projection_no_solution)s""",
    # toprank.losses: the cross-entropies of probability mappings
    "loss_z_y": """\
z : array_like of float32 or float64, shape (m,) or (n, m)
    Scores over m classes of one example, or a batch of n examples (rows computed in
    parallel without the GIL). float32 stays float32.
y : int or array_like of int, shape (n,)
    The true class: an int in [0, m) for a 1-D ``z``, one per row for a 2-D ``z``.""",
    "loss_n_jobs": """\
n_jobs : int or None, default None
    Threads for a batch: ``None`` one, ``-1`` all cores, ``-2`` all but one.""",
    "loss_returns": """\
Returns
-------
loss : float or ndarray of shape (n,)
    A float for a 1-D ``z``; one loss per row, in ``z``'s dtype, for a batch.
grad : ndarray
    The gradient with respect to ``z``, of its shape and dtype.""",
    "loss_invalid": """\
InvalidInputError
    ``z`` empty, not 1-D or 2-D, of an integer, bool or complex dtype, or with NaN
    or infinite entries; ``y`` not an integer (array) in [0, m) with one label per
    row; ``n_jobs`` not an integer, ``0`` or out of range.""",
    "topk_hinge_k_variant": """\
k : int
    ``1 <= k <= m - 1``.
variant : {"alpha", "beta"}, default "alpha"
    Which loss.""",
    "rankmax_eta": """\
eta : float, default 1.0
    The margin, finite and ``> 0``.""",
    "loss_overflow": """\
NoSolutionError
    The loss overflows float64 (finite scores whose differences exceed ~1e308):
    rescale the scores.""",
    "loss_sections": """\
Parameters
----------
%(loss_z_y)s
%(loss_n_jobs)s

%(loss_returns)s

Raises
------
%(loss_invalid)s
%(loss_overflow)s""",
    # toprank.metrics: the metrics at k of label rankings
    "at_k_parameters": """\
Parameters
----------
y_true : array_like, scipy.sparse matrix or list of label sets
    The relevant labels of the n rows: an (n, L) 0/1 indicator (dense or
    scipy.sparse) or a list (or tuple) of n label sets of column indices in [0, L)
    (see the module docs).
scores : array_like of shape (n, L)
    Finite real scores (any real dtype; float32 is compared in float32), higher
    ranking first.
k : int
    How many of each row's top-ranked labels count, ``1 <= k <= L``.""",
    "at_k_invalid": """\
InvalidInputError
    ``scores`` not a non-empty 2-D real array or with NaN/inf; ``y_true`` of another
    shape, with values other than 0/1, or with a label outside [0, L); ``k`` not an
    integer in [1, L].""",
    "at_k_see_also": """\
See Also
--------
precision_at_k, recall_at_k, average_precision_at_k : The other metrics at k.
toprank.scoring.ranking_scorer : Any of them as a ``scoring=`` callable.""",
    "at_k_raises_no_row": """\
Raises
------
%(at_k_invalid)s
    Also: no row has a relevant label.

%(at_k_see_also)s""",
    # the binary precision-recall metrics of ranking at the top
    "precision_recall_notes": """\
Notes
-----
One stable sort of the scores: O(n log n).

References
----------
.. [1] V. Mácha, L. Adam, V. Šmídl. *Nonlinear classifiers for ranking problems
   based on kernelized SVM.* 2020 (accuracy at the top; precision and recall,
   eq. (20)).""",
    # the estimators' fit
    "fit_parameters_X": """\
Parameters
----------
X : {array-like, sparse matrix} of shape (n_samples, n_features)""",
    "fit_returns": """\
Returns
-------
object
    The fitted estimator, ``self``.""",
    "fit_returns_raises": """\
%(fit_returns)s

Raises
------
InvalidInputError""",
    "fit_y_class_labels": """\
y : array-like of shape (n_samples,)
    Class labels (at least two distinct).""",
    # the estimators' parameters and attributes
    "kernel_degree": """\
degree : int, default=3
    Polynomial kernel degree (≥ 1).""",
    "dual_verbose": """\
verbose : int, default=0
    1 prints a duality-gap check's line at most once a second (the first always)
    and a last line with the final status; 2 prints every check's line.""",
    "sdca_check_every": """\
check_every : int, default=5
    Epochs between two duality-gap checks (a check costs about an epoch). With
    ``shrinking`` and at least 256 classes (hinge losses) the first check comes
    after epoch 1: it builds the class lists that make later epochs cheap.""",
    "sdca_dual_layout": """\
dual_layout : {"auto", "dense", "sparse"}, default="auto"
    Where the solver keeps the dual variables A (n_samples × n_classes): "auto"
    stores only each example's nonzeros for the hinge losses on linear models with
    at least 256 classes (their dual rows hold the label and the classes that
    violate its margin, a few dozen of thousands: 10.2 GB dense at 1.28 M examples
    and 1,000 classes, about 0.6 GB sparse), and dense rows otherwise (faster with
    few classes, and the only layout for kernels). ``dual_coef_`` is then a SciPy
    CSR array. Both layouts give the same model.""",
    "n_features_in": """\
n_features_in_ : int
    Number of features seen during :meth:`fit`.""",
    # the estimators' prediction methods
    "samples_parameter": """\
Parameters
----------
X : {array-like, sparse matrix} of shape (n_samples, n_features)
    Samples, as accepted by ``fit``.""",
    "kernel_samples_parameter": """\
Parameters
----------
X : {array-like, sparse matrix} of shape (n_samples, n_features)
    Samples (for ``kernel="precomputed"``, their kernel with the training
    samples).""",
    "dense_kernel_samples_parameter": """\
Parameters
----------
X : array-like of shape (n_samples, n_features)
    Samples (for ``kernel="precomputed"``, their kernel with the training
    samples).""",
    "coded_samples_parameter": """\
Parameters
----------
X : {array-like, sparse matrix} of shape (n_samples, n_features)
    Samples (dense, CSR or a :class:`~toprank.pq.CompressedMatrix`).""",
    # the fitted models' history_ records
    "progress_see_also": """\
See Also
--------
FitProgress : The record of the dual solvers' gap checks.""",
    # the Prox-SDCA estimators' (TopKSVC, MultiLabelSVC) report attributes
    "sdca_objective_attributes": """\
n_iter_ : int
    Epochs run.
primal_objective_ : float
    P(W) at the returned solution.
dual_objective_ : float
    D(A) at the returned solution.
duality_gap_ : float
    Relative duality gap :math:`(P - D) / \\max(|P|, |D|)`.""",
    # the command lines' entry points
    "cli_main_parameters": """\
Parameters
----------
argv : sequence of str, optional
    Arguments (default: ``sys.argv[1:]``).

Returns
-------
int""",
    # iris, and a classifier pipeline on it, for the examples
    "iris_example": """\
>>> from sklearn.datasets import load_iris
>>> X, y = load_iris(return_X_y=True)""",
    "tracenorm_path_example": """\
>>> from toprank import tracenorm_path
%(iris_example)s""",
    "iris_pipeline_example": """\
>>> from sklearn.pipeline import make_pipeline
>>> from sklearn.preprocessing import StandardScaler
>>> from toprank import TopKSVC
%(iris_example)s""",
    # toprank.plotting
    "plotting_ax": """\
ax : matplotlib.axes.Axes, optional
    Where to draw; default: a new figure's Axes (``plt.subplots()``).""",
    "plotting_returns_raises": """\
Returns
-------
matplotlib.axes.Axes
    ``ax``, or the new Axes.

Raises
------""",
    "plotting_no_matplotlib": """\
ImportError
    matplotlib is not installed.""",
    # two rankers' scores of the same labels, for the examples
    "plotting_example_scores": """\
>>> import numpy as np
>>> from matplotlib.figure import Figure
>>> rng = np.random.default_rng(0)
>>> y = rng.integers(0, 2, 200)
>>> good = y + rng.normal(scale=0.8, size=200)  # scores of two rankers
>>> poor = y + rng.normal(scale=2.0, size=200)""",
    # toprank.distributed: a model fitted on two partitions on local threads
    "cocoa_example_fit": """\
>>> import numpy as np
>>> from sklearn.datasets import make_classification
>>> from toprank import TopKSVC
>>> from toprank.distributed import fit_cocoa
>>> X, y = make_classification(n_samples=300, n_features=8, n_informative=6, n_classes=3,
...                            class_sep=2.0, random_state=0)
>>> X /= np.linalg.norm(X, axis=1).max()  # rows of norm <= 1: well scaled for the dual
>>> model, history = fit_cocoa(None, TopKSVC(k=1, random_state=0), [X[:150], X[150:]], [y[:150], y[150:]])""",
    "cocoa_example_dask": """\
>>> import dask.array as da
>>> X_dask = da.from_array(X, chunks=(100, 8))""",
    "cocoa_fitted_estimator": """\
estimator : TopKSVC or M3L
    Fitted (by :func:`fit_cocoa` or otherwise).""",
    # toprank.pq
    "pq_rows_parameter": """\
Parameters
----------
X : array_like of shape (n_samples, n_features)
    Rows of the width fitted on.""",
    "pq_raises_as_encode": """\
Raises
------
InvalidInputError
    As :meth:`encode`.""",
    "pq_not_fitted": """\
sklearn.exceptions.NotFittedError
    Before ``fit``.""",
    "pq_decoded_returns": """\
Returns
-------
ndarray of float32, shape (n, d)
    X̂.""",
    "pq_raises_refitted": """\
Raises
------
InvalidInputError
    The quantizer was refitted since the codes were made.""",
    "pq_example_fit": """\
>>> import numpy as np
>>> from toprank.pq import ProductQuantizer
>>> X = np.random.default_rng(0).normal(size=(1000, 16))
>>> pq = ProductQuantizer(n_subspaces=4, n_bits=4, random_state=0).fit(X)""",
    "pq_example_compressed": """\
%(pq_example_fit)s
>>> Xc = pq.compress(X)""",
    # toprank.torch: the functions' parameters
    "torch_z": _torch_scores("z"),
    "torch_scores": _torch_scores("scores"),
    "torch_rows_x": """\
x : torch.Tensor of float32 or float64, shape (..., m)
    The rows to project.""",
    "torch_y_ignore": """\
y : torch.Tensor of int, shape (...)
    The label of each row, in [0, m) or ``ignore_index``.""",
    "torch_z_y_ignore": """\
%(torch_z)s
%(torch_y_ignore)s""",
    "torch_smoothing": """\
smoothing : float, default 0.0
    The smoothing γ, finite and ``>= 0``.""",
    "torch_backend": """\
backend : {"auto", "rust", "torch"}, default "auto"
    As :func:`sparsemax`.""",
    "torch_n_jobs": """\
n_jobs : int or None, default None
    Threads of the Rust kernel for the rows: ``None`` one, ``-1`` all cores.""",
    "torch_projection_options": """\
backend : {"auto", "rust", "torch"}, default "auto"
    As :func:`sparsemax`. The torch path needs O(k·m) memory per row.
%(torch_n_jobs)s""",
    "torch_reduction": """\
reduction : {"mean", "sum", "none"}, default "mean"
    As :class:`torch.nn.CrossEntropyLoss`: the mean over the rows whose label is not
    ``ignore_index``, their sum, or one loss per row (0 at ignored rows).
ignore_index : int, default -100
    Rows with this label count nowhere (loss and gradient 0).""",
    "torch_loss_options": """\
%(torch_reduction)s
%(torch_backend)s
%(torch_n_jobs)s""",
    "torch_label_sets": """\
y : torch.Tensor of bool or 0/1 int, shape (..., m)
    The label sets: ``y[..., j]`` whether class j is a label of the row. Every row
    needs a label and a class that is not one.""",
    "torch_label_set_options": """\
reduction : {"mean", "sum", "none"}, default "mean"
    The mean over the rows, their sum, or one loss per row.
%(torch_backend)s
%(torch_n_jobs)s""",
    "torch_loss_returns": """\
Returns
-------
torch.Tensor
    A scalar, or the losses of shape (...) for ``reduction="none"``; z's dtype.""",
    # toprank.torch: the modules' parameters and forward
    "torch_module_options": """\
%(torch_backend)s
n_jobs : int or None, default None
    Threads of the Rust kernel.""",
    "torch_module_loss_options": """\
reduction : {"mean", "sum", "none"}, default "mean"
    How the rows' losses combine.
ignore_index : int, default -100
    The label of rows that count nowhere.
%(torch_module_options)s""",
    "torch_module_label_set_options": """\
reduction : {"mean", "sum", "none"}, default "mean"
    How the rows' losses combine.
%(torch_module_options)s""",
    "torch_forward_rows": """\
Parameters
----------
x : torch.Tensor, shape (..., m)
    The rows.

Returns
-------
torch.Tensor
    Of x's shape.""",
    "torch_forward_z_y": """\
Parameters
----------
z : torch.Tensor, shape (..., m)
    Scores.
y : torch.Tensor of int, shape (...)
    The labels.""",
    "loss_label_sets": """\
y : array_like of bool or 0/1 int, the shape of the scores
    The label sets: ``y[i, j]`` whether class j is a label of example i. Every row
    needs a label and a class that is not one.""",
    # References cited alike by several functions.
    "refs_lapin_multilabel": """\
References
----------
.. [1] M. Lapin, M. Hein, B. Schiele. *Analysis and Optimization of Loss Functions
   for Multiclass, Top-k, and Multilabel Classification.* TPAMI 40(7), 2018, §4.""",
    "refs_sparsemax": """\
References
----------
.. [1] A. Martins, R. Astudillo. *From Softmax to Sparsemax: A Sparse Model of
   Attention and Multi-Label Classification.* ICML 2016, §2.""",
    "refs_rankmax_evaluation": """\
References
----------
.. [1] W. Kong, W. Krichene, N. Mayoraz, S. Rendle, L. Zhang. *Rankmax: An Adaptive
   Projection Alternative to the Softmax Function.* NeurIPS 2020, §4.""",
    "refs_plotting": """\
References
----------
.. [1] V. Mácha, L. Adam, V. Šmídl. *Nonlinear classifiers for ranking problems based
   on kernelized SVM.* 2020, §4.4 (Figures 1 and 2).""",
}


def _render(text: str, owner: object) -> str:
    def fragment(match: re.Match[str]) -> str:
        indent, name = match.groups()
        if name not in FRAGMENTS:
            raise KeyError(f"{getattr(owner, '__qualname__', owner)}: no docstring fragment %({name})s")
        lines = _render(FRAGMENTS[name], owner).splitlines()
        return "\n".join(indent + line if line else line for line in lines)

    return _PLACEHOLDER.sub(fragment, text)


def _fill(obj: object) -> None:
    if obj.__doc__:
        obj.__doc__ = _render(obj.__doc__, obj)


def fill_doc(obj: _T) -> _T:
    """``obj`` with each ``%(name)s`` line of its docstring replaced by ``FRAGMENTS[name]``.

    On a class, also the docstrings of the methods and properties its body defines (a
    property's own and its getter's, a classmethod's and its function's).
    """
    _fill(obj)
    if isinstance(obj, type):
        for member in vars(obj).values():
            if isinstance(member, (property, classmethod, staticmethod)):
                _fill(member)
                _fill(member.fget if isinstance(member, property) else member.__func__)
            elif callable(member):
                _fill(member)
    return obj
