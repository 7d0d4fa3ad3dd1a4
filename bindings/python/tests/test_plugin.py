"""Plugins: the example plugin's backend in the registry, built, unloaded; bad paths."""
import numpy as np
import pytest

import libattn
from conftest import config, spec


def test_example_plugin(lib, plugin_path, mixed):
    before = lib.backends()
    with lib.load_plugin(plugin_path) as plugin:
        assert plugin.loaded and plugin.name
        assert lib.backends() == before + ["EXAMPLE_PAGED"]
        with lib.builder("EXAMPLE_PAGED", spec(), config()) as b:
            assert b.reorder_batch_threshold == 1 and b.supports_update_block_table
            md = b.build(mixed.common())
            assert md.kind == "EXAMPLE_PAGED"
            np.testing.assert_array_equal(md["seq_lens"], mixed.seq)
            with pytest.raises(libattn.Busy):
                plugin.unload()  # a builder of its backend is alive
    assert not plugin.loaded
    assert lib.backends() == before
    plugin.unload()  # idempotent


def test_bad_plugin_paths(lib, tmp_path):
    with pytest.raises(libattn.NotFound) as e:
        lib.load_plugin(str(tmp_path / "missing.so"))
    assert "missing.so" in e.value.message
    with pytest.raises(libattn.NotFound) as e:
        lib.load_plugin(lib.path)  # a library without attn_plugin_entry
    assert "attn_plugin_entry" in e.value.message
