"""Croissant (MLCommons) metadata for an exported folder: the distribution (each shard with its
checksum), one record set per config with a field per column and its type.

Why written by curate and not left to the Hub: a folder used outside the Hub (a paper's
artifact, an internal mirror) should still describe itself in the format ML tooling reads.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from curate.publish.metadata import CardInfo

CROISSANT_CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}


#: ``datasets`` Value dtypes → Croissant 1.0 data types (schema.org's atomic types).
_CROISSANT_TYPES = {
    "bool": "sc:Boolean",
    "string": "sc:Text",
    "large_string": "sc:Text",
    "string_view": "sc:Text",
    "null": "sc:Text",
    "date32": "sc:Date",
    "date64": "sc:Date",
    "binary": "sc:Text",
    "large_binary": "sc:Text",
}


_CROISSANT_ID = re.compile(r"[^a-zA-Z0-9\-_.]")


_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _croissant_type(dtype: str) -> str:
    if dtype in _CROISSANT_TYPES:
        return _CROISSANT_TYPES[dtype]
    if re.match(r"^u?int\d+$", dtype):
        return "sc:Integer"
    if re.match(r"^float\d+$", dtype):
        return "sc:Float"
    if dtype.startswith(("timestamp", "time", "date")):
        return "sc:Date"
    return "sc:Text"


def _json_path_key(name: str) -> str:
    """A struct key as a JSONPath step (``['odd key']`` when it is not a plain name)."""
    if _PLAIN_KEY.match(name):
        return name
    return "['" + name.replace("\\", "\\\\").replace("'", "\\'") + "']"


#: A shard's path → its split: ``data/<split>-00000-of-00001.parquet`` (``fullpath`` may carry a
#: folder before ``data/``).
#: It also matches a bare split name: mlcroissant applies the transform again to the value it
#: extracted, and would warn once per record otherwise.
_SPLIT_FROM_PATH = r"^(?:(?:.*/)?data/)?(.+?)(?:-[0-9]+-of-[0-9]+\.parquet)?$"


def _split_of(path: str) -> str:
    m = re.match(_SPLIT_FROM_PATH, path)
    assert m is not None, path
    return m.group(1)


def croissant_metadata(
    card: CardInfo,
    features: Any,
    shards: Sequence[tuple[str, int, str]],
    *,
    config: str = "default",
    license: str | None = None,
    language: Sequence[str] = (),
) -> dict[str, Any]:
    """Croissant 1.0 JSON-LD for an exported folder.

    ``distribution``: one ``cr:FileObject`` per parquet shard (relative ``contentUrl``, size,
    sha256) and one ``cr:FileSet`` per config holding them (``data/*.parquet``).
    ``recordSet``: a ``cr:Split`` set naming the splits, then one per config; a ``split`` field
    (read from each shard's path) and one ``cr:Field`` per feature, nested the way the features
    are: a struct becomes a field with ``subField`` entries read by ``jsonPath`` from the column,
    a list is ``repeated`` (Croissant 1.0 has no multi-dimensional arrays: a list of lists is
    one repeated field whose values keep their nesting). A struct inside another field is
    declared by its leaves on that field (``target_new.str``), their ``@id`` the value's path:
    what ``mlcroissant`` reads back into each record (tests/test_croissant_rows.py).
    """
    fileset = f"parquet-files-{config}"
    ids: set[str] = set()

    def unique(raw: str, parent: str = "") -> str:
        # ``/`` separates a field's id from its parent's; any other odd character becomes ``_``
        out = (f"{parent}/" if parent else "") + _CROISSANT_ID.sub("_", raw)
        while out in ids:
            out += "_0"
        ids.add(out)
        return out

    def to_fields(
        fid: str, name: str, column: str, feature: Any, path: list[str], inside: str = ""
    ) -> list[dict[str, Any]]:
        from datasets import LargeList, List, Value

        repeated = False
        while isinstance(feature, List | LargeList):
            repeated = True
            feature = feature.feature
        if isinstance(feature, dict):
            subs = [
                f
                for key, sub in feature.items()
                for f in to_fields(
                    unique(key, fid), key, column, sub, [*path, _json_path_key(key)], name
                )
            ]
            if inside and not repeated:
                # A struct inside another field: its leaves are its parent's subfields, named
                # by their path (``target_new.str``), their @ids keeping it. mlcroissant builds
                # records one level deep: a struct of a struct came back beside the record
                # (MQuAKE's requested_rewrite[].target_new as a top-level key holding
                # column-wise lists), not in each list element.
                return [{**f, "name": f"{name}.{f['name']}"} for f in subs]
            out: dict[str, Any] = {"@type": "cr:Field", "@id": fid, "name": name}
            out["subField"] = subs
        else:
            out = {"@type": "cr:Field", "@id": fid, "name": name}
            dtype = feature.dtype if isinstance(feature, Value) else "string"
            source: dict[str, Any] = {"fileSet": {"@id": fileset}, "extract": {"column": column}}
            if path:
                source["transform"] = [{"jsonPath": p} for p in path]
            out["dataType"] = _croissant_type(dtype)
            out["source"] = source
        if repeated:
            out["repeated"] = True
        return [out]

    distribution: list[dict[str, Any]] = [
        {
            "@type": "cr:FileObject",
            "@id": unique(path),
            "name": path,
            "contentUrl": path,
            "contentSize": f"{size} B",
            "encodingFormat": "application/x-parquet",
            "sha256": digest,
        }
        for path, size, digest in shards
    ]
    distribution.append(
        {
            "@type": "cr:FileSet",
            "@id": unique(fileset),
            "name": fileset,
            "description": f"The parquet shards of the {config} config (every split).",
            "encodingFormat": "application/x-parquet",
            "includes": "data/*.parquet",
        }
    )
    record_id = unique(config)
    fields = [
        f
        for name, feature in features.items()
        for f in to_fields(unique(name, record_id), name, name, feature, [])
    ]
    # The split of a record is the file it sits in (data/<split>-NNNNN-of-NNNNN.parquet), as on
    # the Hub: a ``cr:Split`` record set names the splits and each record's ``split`` field is
    # read from its file's path, so ``mlcroissant`` users can filter train from test.
    split_names = list(dict.fromkeys(_split_of(path) for path, _, _ in shards))
    splits_id = unique("splits")
    split_key = unique("name", splits_id)
    split_name = next(n for n in ("split", "hf_split", "curate_split") if n not in features)
    fields.append(
        {
            "@type": "cr:Field",
            "@id": unique(split_name, record_id),
            "name": split_name,
            "description": "The split the record belongs to (from its file name).",
            "dataType": "sc:Text",
            "source": {
                "fileSet": {"@id": fileset},
                "extract": {"fileProperty": "fullpath"},
                "transform": {"regex": _SPLIT_FROM_PATH},
            },
            "references": {"field": {"@id": split_key}},
        }
    )
    doc: dict[str, Any] = {
        "@context": CROISSANT_CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": "http://mlcommons.org/croissant/1.0",
        "name": card.pretty_name,
        "description": card.description or card.pretty_name,
        "license": license or card.license,
        "url": "README.md",
        "version": "1.0.0",
        "keywords": list(dict.fromkeys([*card.task_categories, *card.tags])),
        "distribution": distribution,
        "recordSet": [
            {
                "@type": "cr:RecordSet",
                "dataType": "cr:Split",
                "@id": splits_id,
                "name": "splits",
                "description": "The splits of the dataset.",
                "key": {"@id": split_key},
                "field": [
                    {"@type": "cr:Field", "@id": split_key, "name": "name", "dataType": "sc:Text"}
                ],
                "data": [{split_key: name} for name in split_names],
            },
            {
                "@type": "cr:RecordSet",
                "@id": record_id,
                "name": config,
                "description": f"The records of the {config} config, every split.",
                "field": fields,
            },
        ],
    }
    if language:
        doc["inLanguage"] = list(language)
    if card.source_datasets:
        doc["isBasedOn"] = list(card.source_datasets)
    if card.citation:
        doc["citeAs"] = card.citation
    if card.date_published:
        doc["datePublished"] = card.date_published
    return doc
