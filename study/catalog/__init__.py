"""The perturbation catalog: document format (YAML/CSV) and versioned storage."""

from study.catalog.document import (
    CONDITION_CLASSES,
    CatalogCategory,
    CatalogDocument,
    CatalogEntry,
    Stimulus,
    catalog_to_csv,
    catalog_to_yaml,
    load_default_catalog,
    read_catalog_file,
)
from study.catalog.store import (
    CatalogImport,
    catalog_document,
    catalog_perturbations,
    ensure_default_catalog,
    import_catalog,
    list_catalogs,
    resolve_catalog,
)

__all__ = [
    "CONDITION_CLASSES",
    "CatalogCategory",
    "CatalogDocument",
    "CatalogEntry",
    "CatalogImport",
    "Stimulus",
    "catalog_document",
    "catalog_perturbations",
    "catalog_to_csv",
    "catalog_to_yaml",
    "ensure_default_catalog",
    "import_catalog",
    "list_catalogs",
    "load_default_catalog",
    "read_catalog_file",
    "resolve_catalog",
]
