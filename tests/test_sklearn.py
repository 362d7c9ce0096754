"""scikit-learn's Array API dispatch on lazytensor tensors: every estimator and function that
scikit-learn (1.9) names as supporting it (its docs' modules/array_api.rst, the estimators'
`array_api_support` tag, and its own array API tests) fits or computes under
`sklearn.config_context(array_api_dispatch=True)` on lazytensor tensors as it does on numpy
arrays, and gives back lazytensor tensors where it gives arrays. Also, with dispatch off, a
cross-validation in worker processes takes lazytensor tensors (they pickle).

Left out, because they fail on PyTorch tensors too (scikit-learn 1.9.1's own defects):
roc_curve with drop_intermediate=True and roc_auc_score (`xp.diff(x, 2)`: the standard's `n` is
keyword-only), compute_class_weight (its parameter check wants numpy `classes`),
matthews_corrcoef (mixes namespaces), classification_report (on PyTorch, numpy's sum of a
tensor; on lazytensor, its dict keys are str() of 0-d tensors), and Nystroem's linear and cosine
kernels with more components than the data's rank (a singular kernel matrix: every namespace
gives its own answer)."""
from functools import partial

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn", reason="scikit-learn is not installed")

from conftest import skip_without_scipy_array_api  # noqa: E402

skip_without_scipy_array_api(": scikit-learn's dispatch needs it")

from sklearn import calibration, decomposition, discriminant_analysis, kernel_approximation  # noqa: E402
from sklearn import linear_model, metrics, mixture, model_selection, naive_bayes, pipeline, preprocessing  # noqa: E402
from sklearn.experimental import enable_halving_search_cv  # noqa: E402,F401
from sklearn.metrics import cluster, pairwise  # noqa: E402
from sklearn.utils import extmath, multiclass, validation  # noqa: E402

import lazytensor as lt  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore")   # (scikit-learn's notes: solver chosen, ill-defined scores)

# ---- data: small, fixed seeds ------------------------------------------------------------------
rng = np.random.default_rng(2025)
N, F = 40, 4
X = rng.standard_normal((N, F))
X_POS = np.abs(X) + 0.1
Y_BIN = (X[:, 0] + 0.5 * rng.standard_normal(N) > 0).astype(np.int64)
Y_MULTI = np.digitize(X[:, 1] + 0.3 * rng.standard_normal(N), [-0.5, 0.5]).astype(np.int64)
Y_MULTILABEL = (rng.random((N, 3)) < 0.5).astype(np.int64)
Y_REG = X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.1 * rng.standard_normal(N)
Y_REG2 = np.stack([Y_REG, X[:, 3] - X[:, 1]], axis=1)
Y_POS = np.exp(0.3 * X[:, 0]) * rng.poisson(2.0, N) + 0.5
SW = rng.random(N) + 0.2
KERNEL = X @ X.T
BLOBS = np.concatenate([rng.standard_normal((20, 2)) - 2, rng.standard_normal((20, 2)) + 2])
XP, YP = np.abs(rng.standard_normal((6, 3))) + 0.05, np.abs(rng.standard_normal((5, 3))) + 0.05
XP2 = np.abs(rng.standard_normal((5, 3))) + 0.05
# metrics' inputs (as scikit-learn's own array API checks have them)
YT_B, YP_B = np.array([0, 0, 1, 1, 1, 0, 1, 0]), np.array([0, 1, 0, 1, 1, 0, 1, 1])
YT_M, YP_M = np.array([0, 1, 2, 3, 2, 1, 0, 3]), np.array([0, 1, 0, 2, 2, 1, 3, 3])
YT_ML = np.array([[1, 1, 0], [0, 1, 1], [0, 0, 1], [1, 0, 0]])
YP_ML = np.array([[1, 1, 1], [1, 0, 1], [0, 0, 1], [1, 1, 0]])
SW8, SW4 = np.array([0.0, 0.1, 2.0, 1.0, 0.5, 1.5, 1.0, 0.3]), np.array([0.0, 0.1, 2.0, 1.0])
PROB_B = np.array([0.5, 0.2, 0.7, 0.6, 0.9, 0.1, 0.4, 0.65])
YT_C4 = np.array([0, 1, 2, 3])
PROB_M = np.array([[0.5, 0.2, 0.2, 0.1], [0.4, 0.4, 0.1, 0.1], [0.1, 0.1, 0.7, 0.1], [0.1, 0.2, 0.6, 0.1]])
YT_MLC = np.array([[0, 0, 1, 1], [1, 0, 1, 0], [0, 1, 0, 0], [1, 1, 0, 1]], dtype=float)
PROB_ML = np.array([[0.15, 0.27, 0.46, 0.12], [0.33, 0.38, 0.06, 0.23], [0.06, 0.28, 0.03, 0.63],
                    [0.14, 0.31, 0.26, 0.29]])
YT_R, YP_R = np.array([2.0, 0.1, 1.0, 4.0, 3.0, 0.5]), np.array([0.5, 0.5, 2.0, 2.0, 2.5, 0.7])
SW6 = np.array([0.1, 2.0, 1.5, 0.5, 1.0, 0.2])
YT_R2, YP_R2 = np.array([[1.0, 3, 2], [1, 2, 2], [2, 2, 3]]), np.array([[1.0, 4, 4], [1, 1, 1], [2, 3, 3]])
SW3 = np.array([0.1, 2.0, 1.0])


# ---- cases: call(a) with `a` turning numpy data into the namespace under test --------------------

def fitted(est) -> dict:
    """An estimator's fitted array and number attributes (coef_, components_, ...)."""
    return {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_") and
            isinstance(v, (np.ndarray, lt.Tensor, float, int, np.number)) and k != "n_features_in_"}


def estimator(make, data=X, y=None, methods=("predict",), fit_kw=None, attrs=True, test=None):
    """Fit make() on a(data) (and a(y)); the methods' results on a(test or data), and the fitted
    attributes."""
    def call(a):
        est = make()
        kw = {k: a(v) for k, v in (fit_kw or {}).items()}
        est.fit(a(data), **kw) if y is None else est.fit(a(data), a(y), **kw)
        x = a(data if test is None else test)
        out = {}
        for m in methods:
            if m == "inverse_transform":
                out[m] = est.inverse_transform(est.transform(x))
            elif m == "score":
                out[m] = est.score(x) if y is None else est.score(x, a(y))
            else:
                out[m] = getattr(est, m)(x)
        if attrs:
            out["fitted"] = fitted(est)
        return out
    return call


def search(make, y=Y_REG):
    def call(a):
        est = make().fit(a(X), a(y))
        return {"predict": est.predict(a(X)), "best_params_": str(est.best_params_),
                "best_score_": est.best_score_, "mean_test_score": est.cv_results_["mean_test_score"]}
    return call


def labels(f, binary=True, multiclass_=True, multilabel=True, averages=("micro", "macro", "weighted"), **kw):
    """A classification metric on binary, multiclass and multilabel labels, with and without
    sample weights, for each averaging."""
    kinds = [(YT_B, YP_B, SW8, (None,))] if binary else []   # (None: the metric's default average)
    kinds += [(YT_M, YP_M, SW8, averages or (None,))] if multiclass_ else []
    kinds += [(YT_ML, YP_ML, SW4, averages or (None,))] if multilabel else []

    def call(a):
        out = []
        for yt, yp, sw, choices in kinds:
            for average in choices:
                extra = {"average": average} if average else {}
                for weights in (None, sw):
                    out.append(f(a(yt), a(yp), sample_weight=None if weights is None else a(weights), **extra, **kw))
        return out
    return call


def probabilities(f, **kw):
    def call(a):
        out = []
        for yt, p, sw in ((YT_B, PROB_B, SW8), (YT_C4, PROB_M, SW4), (YT_MLC, PROB_ML, SW4)):
            for weights in (None, sw):
                out.append(f(a(yt), a(p), sample_weight=None if weights is None else a(weights), **kw))
        return out
    return call


def regression(f, multioutput=True, sample_weight=True, **kw):
    def call(a):
        out = [f(a(YT_R), a(YP_R), **kw)]
        if sample_weight:
            out.append(f(a(YT_R), a(YP_R), sample_weight=a(SW6), **kw))
        if multioutput:
            for mo in ("raw_values", "uniform_average", np.array([0.1, 0.3, 0.7])):
                out.append(f(a(YT_R2), a(YP_R2), multioutput=a(mo) if isinstance(mo, np.ndarray) else mo, **kw))
            if sample_weight:
                out.append(f(a(YT_R2), a(YP_R2), sample_weight=a(SW3), **kw))
        return out
    return call


def ranking(f, **kw):
    return lambda a: [f(a(YT_B), a(PROB_B), **kw), f(a(YT_B), a(PROB_B), sample_weight=a(SW8), **kw)]


def pairs(f, **kw):
    return lambda a: [f(a(XP), a(YP), **kw), f(a(XP), **kw)]


DECOMPOSE = ("transform", "inverse_transform", "score_samples", "score")
TRANSFORM = ("transform",)
GRID = {"alpha": [0.1, 1.0, 10.0]}
M = metrics

# (id, call(a), keys of results that scikit-learn gives as numpy arrays for every namespace)
CASES = [
    # ---- estimators
    ("PCA(full)", estimator(lambda: decomposition.PCA(n_components=2, svd_solver="full"), methods=DECOMPOSE)),
    ("PCA(full,whiten)", estimator(lambda: decomposition.PCA(3, svd_solver="full", whiten=True), methods=DECOMPOSE)),
    ("PCA(n_components=0.8)", estimator(lambda: decomposition.PCA(n_components=0.8, svd_solver="full"),
                                        methods=TRANSFORM)),
    ("PCA(covariance_eigh)", estimator(lambda: decomposition.PCA(2, svd_solver="covariance_eigh"), methods=DECOMPOSE)),
    ("PCA(randomized,QR)", estimator(lambda: decomposition.PCA(
        2, svd_solver="randomized", power_iteration_normalizer="QR", random_state=0), methods=DECOMPOSE)),
    ("Ridge(svd)", estimator(lambda: linear_model.Ridge(solver="svd"), y=Y_REG)),
    ("Ridge(auto)", estimator(linear_model.Ridge, y=Y_REG)),
    ("Ridge(sample_weight)", estimator(lambda: linear_model.Ridge(alpha=0.5), y=Y_REG, fit_kw={"sample_weight": SW})),
    ("Ridge(alpha per target)", estimator(lambda: linear_model.Ridge(alpha=np.array([0.1, 3.0])), y=Y_REG2)),
    ("Ridge(fit_intercept=False)", estimator(lambda: linear_model.Ridge(fit_intercept=False), y=Y_REG)),
    ("RidgeCV", estimator(lambda: linear_model.RidgeCV(alphas=(0.1, 1.0, 10.0)), y=Y_REG)),
    ("RidgeCV(alpha_per_target)", estimator(
        lambda: linear_model.RidgeCV(alphas=(0.1, 1.0, 10.0), alpha_per_target=True), y=Y_REG2)),
    ("RidgeCV(cv=3)", estimator(lambda: linear_model.RidgeCV(alphas=(0.1, 1.0, 10.0), cv=3), y=Y_REG)),
    ("RidgeClassifier(svd)", estimator(lambda: linear_model.RidgeClassifier(solver="svd"), y=Y_MULTI,
                                       methods=("predict", "decision_function"))),
    ("RidgeClassifier(multilabel)", estimator(lambda: linear_model.RidgeClassifier(solver="svd"), y=Y_MULTILABEL,
                                              methods=("predict", "decision_function"))),
    ("RidgeClassifierCV", estimator(lambda: linear_model.RidgeClassifierCV(alphas=(0.1, 1.0, 10.0)), y=Y_BIN,
                                    methods=("predict", "decision_function"))),
    ("LinearDiscriminantAnalysis", estimator(
        discriminant_analysis.LinearDiscriminantAnalysis, y=Y_MULTI,
        methods=("predict", "predict_proba", "predict_log_proba", "transform", "decision_function"))),
    ("LinearDiscriminantAnalysis(binary)", estimator(discriminant_analysis.LinearDiscriminantAnalysis, y=Y_BIN,
                                                     methods=("predict", "predict_proba", "transform"))),
    ("GaussianNB", estimator(naive_bayes.GaussianNB, y=Y_MULTI,
                             methods=("predict", "predict_proba", "predict_log_proba"))),
    ("GaussianNB(sample_weight)", estimator(naive_bayes.GaussianNB, y=Y_BIN, fit_kw={"sample_weight": SW},
                                            methods=("predict", "predict_proba"))),
    ("LogisticRegression(binary)", estimator(linear_model.LogisticRegression, y=Y_BIN,
                                             methods=("predict", "predict_proba", "decision_function"))),
    ("LogisticRegression(multiclass)", estimator(lambda: linear_model.LogisticRegression(C=0.5), y=Y_MULTI,
                                                 methods=("predict", "predict_proba", "decision_function"))),
    ("LogisticRegression(sample_weight)", estimator(linear_model.LogisticRegression, y=Y_BIN,
                                                    fit_kw={"sample_weight": SW}, methods=("predict_proba",))),
    ("PoissonRegressor", estimator(lambda: linear_model.PoissonRegressor(alpha=0.1), y=Y_POS,
                                   methods=("predict", "score"))),
    *[(f"GaussianMixture({cov})", estimator(
        partial(mixture.GaussianMixture, n_components=2, covariance_type=cov, init_params="random", random_state=0),
        data=BLOBS, methods=("predict", "predict_proba", "score_samples", "score")))
      for cov in ("full", "tied", "diag", "spherical")],
    ("GaussianMixture(random_from_data)", estimator(
        lambda: mixture.GaussianMixture(2, init_params="random_from_data", random_state=0), data=BLOBS,
        methods=("predict", "score_samples"))),
    ("CalibratedClassifierCV(LogisticRegression,temperature)", estimator(
        lambda: calibration.CalibratedClassifierCV(linear_model.LogisticRegression(), method="temperature", cv=3),
        y=Y_MULTI, methods=("predict", "predict_proba"), attrs=False)),
    ("CalibratedClassifierCV(LinearDiscriminantAnalysis,temperature)", estimator(
        lambda: calibration.CalibratedClassifierCV(discriminant_analysis.LinearDiscriminantAnalysis(),
                                                   method="temperature", cv=3),
        y=Y_BIN, methods=("predict", "predict_proba"), attrs=False)),
    ("GridSearchCV(Ridge)", search(lambda: model_selection.GridSearchCV(linear_model.Ridge(), GRID, cv=3)),
     {"mean_test_score"}),
    ("RandomizedSearchCV(Ridge)", search(lambda: model_selection.RandomizedSearchCV(
        linear_model.Ridge(), GRID, n_iter=2, cv=3, random_state=0)), {"mean_test_score"}),
    ("HalvingGridSearchCV(Ridge)", search(lambda: model_selection.HalvingGridSearchCV(
        linear_model.Ridge(), GRID, cv=3, min_resources=20, random_state=0)), {"mean_test_score"}),
    ("HalvingRandomSearchCV(Ridge)", search(lambda: model_selection.HalvingRandomSearchCV(
        linear_model.Ridge(), GRID, cv=3, min_resources=20, random_state=0)), {"mean_test_score"}),
    ("GridSearchCV(LogisticRegression,accuracy)", search(lambda: model_selection.GridSearchCV(
        linear_model.LogisticRegression(), {"C": [0.1, 1.0]}, cv=3, scoring="accuracy"), y=Y_MULTI),
     {"mean_test_score"}),
    ("FeatureUnion(StandardScaler,PCA)", estimator(lambda: pipeline.FeatureUnion(
        [("s", preprocessing.StandardScaler()), ("p", decomposition.PCA(n_components=2))]),
        methods=TRANSFORM, attrs=False)),
    ("Pipeline(StandardScaler,Ridge)", estimator(lambda: pipeline.make_pipeline(
        preprocessing.StandardScaler(), linear_model.Ridge()), y=Y_REG, attrs=False)),
    ("Binarizer", estimator(lambda: preprocessing.Binarizer(threshold=0.2), methods=TRANSFORM)),
    ("KernelCenterer", estimator(preprocessing.KernelCenterer, data=KERNEL, methods=TRANSFORM)),
    ("MaxAbsScaler", estimator(preprocessing.MaxAbsScaler, methods=("transform", "inverse_transform"))),
    ("MaxAbsScaler(clip)", estimator(lambda: preprocessing.MaxAbsScaler(clip=True), methods=TRANSFORM, test=2 * X)),
    ("MinMaxScaler", estimator(preprocessing.MinMaxScaler, methods=("transform", "inverse_transform"))),
    ("MinMaxScaler(clip)", estimator(lambda: preprocessing.MinMaxScaler(clip=True), methods=TRANSFORM, test=2 * X)),
    *[(f"Normalizer({norm})", estimator(partial(preprocessing.Normalizer, norm=norm), methods=TRANSFORM))
      for norm in ("l1", "l2", "max")],
    ("PolynomialFeatures(2)", estimator(lambda: preprocessing.PolynomialFeatures(2), methods=TRANSFORM)),
    ("PolynomialFeatures(3,interaction_only)", estimator(
        lambda: preprocessing.PolynomialFeatures(3, interaction_only=True, include_bias=False), methods=TRANSFORM)),
    ("StandardScaler", estimator(preprocessing.StandardScaler, methods=("transform", "inverse_transform"))),
    ("StandardScaler(sample_weight)", estimator(preprocessing.StandardScaler, methods=TRANSFORM,
                                                fit_kw={"sample_weight": SW})),
    ("StandardScaler(with_mean=False)", estimator(lambda: preprocessing.StandardScaler(with_mean=False),
                                                  methods=TRANSFORM)),
    *[(f"Nystroem({kernel})", estimator(partial(kernel_approximation.Nystroem, kernel=kernel, n_components=10,
                                                random_state=0),
                                        data=X_POS if "chi2" in kernel else X, methods=TRANSFORM))
      for kernel in ("rbf", "poly", "sigmoid", "chi2", "additive_chi2")],
    *[(f"Nystroem({kernel},n_components=3)", estimator(
        partial(kernel_approximation.Nystroem, kernel=kernel, n_components=3, random_state=0), methods=TRANSFORM))
      for kernel in ("linear", "cosine")],
    ("LabelEncoder", lambda a: (lambda le: {"classes_": le.classes_, "transform": le.transform(a(Y_MULTI * 3 + 1)),
                                            "inverse": le.inverse_transform(a(Y_MULTI[::-1]))})(
        preprocessing.LabelEncoder().fit(a(Y_MULTI * 3 + 1)))),
    ("LabelEncoder.fit_transform", lambda a: preprocessing.LabelEncoder().fit_transform(a(Y_MULTI))),
    *[(f"LabelBinarizer({kind})", lambda a, y=y: (lambda lb: {
        "classes_": lb.classes_, "transform": lb.transform(a(y)), "inverse": lb.inverse_transform(lb.transform(a(y)))})(
        preprocessing.LabelBinarizer().fit(a(y))))
      for kind, y in (("binary", Y_BIN), ("multiclass", Y_MULTI), ("multilabel", Y_MULTILABEL))],
    # ---- preprocessing functions
    ("normalize", lambda a: [preprocessing.normalize(a(X), norm=n) for n in ("l1", "l2", "max")]),
    ("binarize", lambda a: preprocessing.binarize(a(X), threshold=0.1)),
    ("label_binarize", lambda a: [preprocessing.label_binarize(a(Y_MULTI), classes=[0, 1, 2]),
                                  preprocessing.label_binarize(a(Y_BIN), classes=[0, 1])]),
    ("minmax_scale", lambda a: preprocessing.minmax_scale(a(X))),
    ("maxabs_scale", lambda a: preprocessing.maxabs_scale(a(X))),
    # ---- classification metrics
    ("accuracy_score", labels(M.accuracy_score, averages=())),
    ("balanced_accuracy_score", labels(M.balanced_accuracy_score, multilabel=False, averages=())),
    ("cohen_kappa_score", labels(M.cohen_kappa_score, multilabel=False, averages=())),
    ("confusion_matrix", labels(M.confusion_matrix, multilabel=False, averages=())),
    ("multilabel_confusion_matrix", labels(M.multilabel_confusion_matrix, averages=())),
    ("f1_score", labels(M.f1_score)),
    ("fbeta_score", labels(M.fbeta_score, beta=0.5)),
    ("jaccard_score", labels(M.jaccard_score)),
    ("precision_score", labels(M.precision_score)),
    ("recall_score", labels(M.recall_score)),
    ("precision_recall_fscore_support", labels(M.precision_recall_fscore_support, averages=(None, "macro"))),
    ("zero_one_loss", labels(M.zero_one_loss, averages=())),
    ("hamming_loss", labels(M.hamming_loss, averages=())),
    ("average_precision_score", lambda a: ranking(M.average_precision_score)(a) + [
        M.average_precision_score(a(YT_C4), a(PROB_M)), M.average_precision_score(a(YT_MLC), a(PROB_ML))]),
    ("roc_curve(drop_intermediate=False)", ranking(M.roc_curve, drop_intermediate=False)),
    ("precision_recall_curve", ranking(M.precision_recall_curve)),
    ("det_curve", ranking(M.det_curve)),
    ("confusion_matrix_at_thresholds", ranking(M.confusion_matrix_at_thresholds)),
    ("brier_score_loss", probabilities(M.brier_score_loss)),
    ("log_loss", probabilities(M.log_loss)),
    ("d2_brier_score", probabilities(M.d2_brier_score)),
    ("d2_log_loss_score", probabilities(M.d2_log_loss_score)),
    # ---- regression metrics
    *[(name, regression(getattr(M, name))) for name in (
        "r2_score", "explained_variance_score", "mean_absolute_error", "mean_pinball_loss", "mean_squared_error",
        "mean_squared_log_error", "median_absolute_error", "d2_absolute_error_score", "d2_pinball_score",
        "mean_absolute_percentage_error", "root_mean_squared_error", "root_mean_squared_log_error")],
    ("d2_pinball_score(alpha=0.1)", regression(M.d2_pinball_score, alpha=0.1)),
    ("mean_tweedie_deviance", lambda a: regression(M.mean_tweedie_deviance, multioutput=False)(a) + [
        M.mean_tweedie_deviance(a(YT_R), a(YP_R), power=p) for p in (-0.5, 1.5, 3)]),
    ("d2_tweedie_score", lambda a: regression(M.d2_tweedie_score, multioutput=False)(a) + [
        M.d2_tweedie_score(a(YT_R), a(YP_R), power=1.5)]),
    ("mean_poisson_deviance", regression(M.mean_poisson_deviance, multioutput=False)),
    ("mean_gamma_deviance", regression(M.mean_gamma_deviance, multioutput=False)),
    ("max_error", regression(M.max_error, multioutput=False, sample_weight=False)),
    # ---- pairwise metrics and kernels
    *[(name, pairs(getattr(pairwise, name))) for name in (
        "cosine_similarity", "cosine_distances", "euclidean_distances", "manhattan_distances", "linear_kernel",
        "laplacian_kernel", "polynomial_kernel", "rbf_kernel", "sigmoid_kernel", "additive_chi2_kernel",
        "chi2_kernel")],
    ("euclidean_distances(squared)", pairs(pairwise.euclidean_distances, squared=True)),
    *[(name, lambda a, f=getattr(pairwise, name): f(a(XP[:5]), a(XP2)))
      for name in ("paired_cosine_distances", "paired_euclidean_distances", "paired_manhattan_distances")],
    ("pairwise_distances", lambda a: [pairwise.pairwise_distances(a(XP), a(YP), metric=m)
                                      for m in ("cosine", "euclidean", "l2", "manhattan", "l1", "cityblock")]),
    ("pairwise_kernels", lambda a: [pairwise.pairwise_kernels(a(XP), a(YP), metric=m) for m in (
        "linear", "poly", "polynomial", "rbf", "sigmoid", "cosine", "chi2", "additive_chi2", "laplacian")]),
    # (threads of joblib write column blocks of one result: tests/test_threads.py has the race)
    ("pairwise_distances(n_jobs=2)", lambda a: [pairwise.pairwise_distances(a(XP), a(YP), metric=m, n_jobs=2)
                                                for m in ("euclidean", "manhattan")]),
    ("pairwise_kernels(n_jobs=2)", lambda a: [pairwise.pairwise_kernels(a(XP), metric=m, n_jobs=2, gamma=0.1)
                                              for m in ("laplacian", "rbf")]),
    ("pairwise_distances_argmin", lambda a: [pairwise.pairwise_distances_argmin(a(XP), a(YP)),
                                             pairwise.pairwise_distances_argmin(a(XP), a(YP), metric="manhattan")]),
    # ---- cluster metrics
    ("calinski_harabasz_score", lambda a: cluster.calinski_harabasz_score(a(X), a(Y_MULTI))),
    ("davies_bouldin_score", lambda a: cluster.davies_bouldin_score(a(X), a(Y_MULTI))),
    ("contingency_matrix", lambda a: {"matrix": cluster.contingency_matrix(a(Y_BIN), a(Y_MULTI))}, {"matrix"}),
    ("entropy", lambda a: cluster._supervised.entropy(a(Y_MULTI))),
    # ---- tools
    ("train_test_split", lambda a: model_selection.train_test_split(a(X), a(Y_MULTI), test_size=0.25,
                                                                    random_state=0)),
    ("train_test_split(stratify)", lambda a: model_selection.train_test_split(
        a(X), a(Y_MULTI), test_size=0.25, random_state=0, stratify=a(Y_MULTI))),
    ("cross_val_predict(Ridge)", lambda a: model_selection.cross_val_predict(linear_model.Ridge(), a(X), a(Y_REG),
                                                                             cv=3)),
    ("cross_val_predict(LogisticRegression,predict_proba)", lambda a: model_selection.cross_val_predict(
        linear_model.LogisticRegression(), a(X), a(Y_MULTI), cv=3, method="predict_proba")),
    ("check_consistent_length", lambda a: validation.check_consistent_length(a(X), a(Y_BIN), a(SW))),
    ("unique_labels", lambda a: [multiclass.unique_labels(a(Y_MULTI)), multiclass.unique_labels(a(Y_BIN), a(Y_MULTI))]),
    ("type_of_target", lambda a: [multiclass.type_of_target(a(y)) for y in (Y_BIN, Y_MULTI, Y_MULTILABEL, Y_REG)]),
    ("is_multilabel", lambda a: [multiclass.is_multilabel(a(y)) for y in (Y_BIN, Y_MULTILABEL)]),
    ("randomized_svd", lambda a: extmath.randomized_svd(a(X), 2, random_state=0, power_iteration_normalizer="QR")),
    ("randomized_range_finder", lambda a: extmath.randomized_range_finder(
        a(X), size=2, n_iter=3, power_iteration_normalizer="QR", random_state=0)),
    ("row_norms", lambda a: [extmath.row_norms(a(X)), extmath.row_norms(a(X), squared=True)]),
    ("softmax", lambda a: extmath.softmax(a(X))),
    ("fast_logdet", lambda a: extmath.fast_logdet(a(KERNEL[:4, :4] + 5 * np.eye(4)))),
    ("svd_flip", lambda a: extmath.svd_flip(*[a(m) for m in np.linalg.svd(X, full_matrices=False)[::2]])),
    ("safe_sparse_dot", lambda a: extmath.safe_sparse_dot(a(X), a(X.T))),
]
CASES = [case if len(case) == 3 else (*case, frozenset()) for case in CASES]
# float32 too, for these (a representative set: each dtype compiles kernels of its own)
FLOAT32 = {"PCA(full)", "PCA(covariance_eigh)", "Ridge(svd)", "RidgeCV", "RidgeClassifier(svd)",
           "LinearDiscriminantAnalysis", "GaussianNB", "LogisticRegression(multiclass)", "PoissonRegressor",
           "GaussianMixture(full)", "StandardScaler", "MinMaxScaler", "Normalizer(l2)", "PolynomialFeatures(2)",
           "Nystroem(rbf)", "KernelCenterer", "f1_score", "log_loss", "r2_score", "mean_pinball_loss",
           "euclidean_distances", "rbf_kernel", "pairwise_kernels(n_jobs=2)", "calinski_harabasz_score",
           "cross_val_predict(Ridge)", "randomized_svd"}
TOLERANCE = {np.float64: dict(rtol=1e-6, atol=1e-9), np.float32: dict(rtol=2e-3, atol=2e-4)}


def converter(namespace: str, dtype):
    """numpy data -> the namespace's arrays, floating ones in `dtype`."""
    def a(value):
        value = np.asarray(value)
        if value.dtype.kind == "f":
            value = value.astype(dtype)
        return lt.asarray(value) if namespace == "lazytensor" else value
    return a


def compare(got, want, host: frozenset, path: str = "result", **tolerance) -> None:
    """Equal within `tolerance`, leaf by leaf; where numpy gives an array, a lazytensor tensor
    (but for the keys in `host`: arrays scikit-learn gives as numpy for any namespace); where
    numpy gives a Python float, a Python float."""
    if isinstance(want, dict):
        assert set(got) == set(want), f"{path}: keys {sorted(got)} != numpy's {sorted(want)}"
        for key in want:
            compare(got[key], want[key], host, f"{path}.{key}", **tolerance)
        return
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), f"{path}: {got!r} against numpy's {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            compare(g, w, host, f"{path}[{i}]", **tolerance)
        return
    if want is None or isinstance(want, (str, bool)):
        assert got == want, f"{path}: {got!r} != numpy's {want!r}"
        return
    if isinstance(want, np.ndarray) and path.rsplit(".", 1)[-1] not in host:
        assert isinstance(got, lt.Tensor), f"{path}: {type(got).__name__}, where numpy gives an array"
    if type(want) is float:
        assert isinstance(got, float), f"{path}: {type(got).__name__}, where numpy gives a float"
    got = got.numpy() if isinstance(got, lt.Tensor) else np.asarray(got)
    assert got.shape == np.shape(want), f"{path}: shape {got.shape} != numpy's {np.shape(want)}"
    np.testing.assert_allclose(got.astype(np.float64), np.asarray(want, dtype=np.float64), err_msg=path,
                               equal_nan=True, **tolerance)


@pytest.mark.parametrize("name, call, host, dtype", [
    pytest.param(*case, dtype, id=f"{case[0]}-{dtype.__name__}")
    for dtype in (np.float64, np.float32) for case in CASES if dtype is np.float64 or case[0] in FLOAT32])
def test_dispatch_on_lazytensor_matches_numpy(name, call, host, dtype):
    want = call(converter("numpy", dtype))
    with sklearn.config_context(array_api_dispatch=True):
        got = call(converter("lazytensor", dtype))
    compare(got, want, host, **TOLERANCE[dtype])


def test_fitted_attributes_stay_lazytensor_and_predict_in_float32():
    """An estimator fitted on float32 tensors keeps float32 lazytensor attributes and predicts
    float32 tensors (scikit-learn follows the input's dtype under dispatch)."""
    with sklearn.config_context(array_api_dispatch=True):
        model = discriminant_analysis.LinearDiscriminantAnalysis().fit(lt.asarray(X, dtype=lt.float32),
                                                                       lt.asarray(Y_MULTI))
        out = model.predict_proba(lt.asarray(X, dtype=lt.float32))
    assert isinstance(model.coef_, lt.Tensor) and model.coef_.dtype == lt.float32
    assert isinstance(out, lt.Tensor) and out.dtype == lt.float32 and out.shape == (N, 3)


def test_cross_val_score_in_worker_processes_takes_tensors():
    """Dispatch off: scikit-learn converts tensors to numpy, and joblib's worker processes get
    them pickled."""
    want = model_selection.cross_val_score(linear_model.Ridge(), X, Y_REG, cv=3, n_jobs=2)
    got = model_selection.cross_val_score(linear_model.Ridge(), lt.asarray(X), lt.asarray(Y_REG), cv=3, n_jobs=2)
    np.testing.assert_allclose(got, want, rtol=1e-10)
