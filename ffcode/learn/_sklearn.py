"""scikit-learn's base classes, as the estimators inherit them: scikit-learn's own at run
time. scikit-learn ships no types, so to a type checker its classes are Any, and a class
built on Any has every attribute: here a type checker sees classes declaring what they give
(parameters, tags, metadata routing, ``score``), so that a misspelt attribute of a model
(``model.coeff_``) is an error in the user's code."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    _B = TypeVar("_B", bound="BaseEstimator")

    class BaseEstimator:
        def get_params(self, deep: bool = True) -> dict[str, Any]: ...

        def set_params(self: _B, **params: Any) -> _B: ...

        def get_metadata_routing(self) -> Any: ...

        def __sklearn_tags__(self) -> Any: ...

    class RegressorMixin:
        def score(self, X: Any, y: Any, sample_weight: Any = None) -> float: ...

    class ClassifierMixin:
        def score(self, X: Any, y: Any, sample_weight: Any = None) -> float: ...
else:
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin

__all__ = ["BaseEstimator", "ClassifierMixin", "RegressorMixin"]
