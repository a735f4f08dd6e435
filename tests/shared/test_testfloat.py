"""testbench.shared.testfloat: locating and parsing the TestFloat vector files, and its error messages."""

import gzip

import numpy as np
import pytest

from nnaccel.testbench.shared.testfloat import REPOSITORY_ROOT, TestFloatError, load_testfloat, reference_vector_dir


def test_default_directory(monkeypatch):
    monkeypatch.delenv("NNACCEL_TESTFLOAT_DIR", raising=False)
    assert reference_vector_dir() == REPOSITORY_ROOT.parent / "shared" / "testfloat"


def test_loads_level1_files():
    f32 = load_testfloat("f32_mul_1")
    assert len(f32) == 46_464 and f32.a.dtype == np.uint32
    f16 = load_testfloat("f16_add_1")
    assert len(f16) == 46_464 and f16.expected.dtype == np.uint16


def _write(directory, name, text):
    with gzip.open(directory / f"{name}.txt.gz", "wt") as file:
        file.write(text)


def test_parses_fields(tmp_path, monkeypatch):
    monkeypatch.setenv("NNACCEL_TESTFLOAT_DIR", str(tmp_path))
    _write(tmp_path, "f32_mul_1", "3F800000 40000000 40000000 00\n7F800000 00000000 FFC00000 10\n")
    vectors = load_testfloat("f32_mul_1")
    assert vectors.a.tolist() == [0x3F800000, 0x7F800000]
    assert vectors.expected.tolist() == [0x40000000, 0xFFC00000]
    assert vectors.flags.tolist() == [0, 0x10]


def test_missing_file_names_the_path(tmp_path, monkeypatch):
    monkeypatch.setenv("NNACCEL_TESTFLOAT_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(TestFloatError, match=r"TestFloat vector file .*nowhere/f32_add_1\.txt\.gz not found"):
        load_testfloat("f32_add_1")


def test_malformed_line_names_path_and_line(tmp_path, monkeypatch):
    monkeypatch.setenv("NNACCEL_TESTFLOAT_DIR", str(tmp_path))
    _write(tmp_path, "f16_add_1", "3C00 3C00 4000 00\n3C00 3C0 4000 00\n")
    with pytest.raises(TestFloatError, match=r"f16_add_1\.txt\.gz line 2: expected 'A B Z FL' with 4-digit "
                                             r"uppercase hex operands and 2-digit flags, got '3C00 3C0 4000 00'"):
        load_testfloat("f16_add_1")


def test_not_gzip(tmp_path, monkeypatch):
    monkeypatch.setenv("NNACCEL_TESTFLOAT_DIR", str(tmp_path))
    (tmp_path / "f32_add_1.txt.gz").write_text("plain text")
    with pytest.raises(TestFloatError, match=r"f32_add_1\.txt\.gz cannot be read"):
        load_testfloat("f32_add_1")
