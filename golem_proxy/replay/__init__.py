"""Replay: recordings as a stand-in plugin (`server`, `engine`), client replay against a live
plugin (`verify`), trace diff (`tracediff`, its exchanges aligned by `alignment`), sharing
`index` (trace → O(1) lookup), `matching` (keys, ignore paths, GUID map) and `diffing`
(structured, GUID-aware comparison)."""
