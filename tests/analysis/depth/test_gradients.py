"""Gradients through depth (tfcli/analysis/depth/gradients.py, backward.py): every layer's
dL/dx and dL/dW equal central finite differences in float64 (relative error below 1e-6) for
every variant and sublayer, on specs that exercise each backward op (LayerNorm with and without
affine, RMSNorm with Gemma's (1 + w), GQA, RoPE in both pairings and partial, sliding windows,
biases, T5's position bias, gated and plain FFNs with every activation); equal torch autograd;
and the CLI shows them, refusing what the backward pass does not cover."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.engine.engine_specs import make_spec
from tfcli.analysis.depth.backward import FFN, Attention, Norm
from tfcli.analysis.depth.gradients import _Linear, draw_layers, stack_gradients, stack_loss
from tfcli.analysis.depth.options import DepthSweepOptions
from tfcli.cli.app import app
from tfcli.spec.model import Spec

VARIANTS = ("pre", "post", "plain", "residual-no-norm")
# engine variants covering each op of the backward pass, shrunk to a few parameters
# (engine variant, overrides): together every op of the backward pass, every activation
SPECS = {
    "gpt": {},  # LayerNorm with affine, biases, tanh GELU
    "llama_gqa": {},  # RMSNorm, GQA, RoPE (rotate-half), SwiGLU
    "mistral_window": {},  # a sliding window of 3
    "mqa_sinusoidal": {},  # one K/V head, ReLU
    "geglu_post": {},  # exact GELU, gated
    "geglu_tanh": {"norm_unit_offset": True},  # Gemma's (1 + w) RMSNorm
    "relative_decoder": {},  # T5's relative bias, a constant the scores add
    "bert": {},  # bidirectional
    "llama_gqa:interleaved": {"rope_pairing": "interleaved", "rotary_dim": 2},  # GPT-J pairs, partial
    "gpt:silu": {"activation": "silu", "norm": "layernorm_noaffine"},
}
TOLERANCE = 1e-6


def _spec(name: str) -> Spec:
    spec = make_spec(name.split(":")[0])
    small = {"d_model": 8, "n_heads": 2, "d_ff": 12, "init_std": 0.3}
    if spec.kv_heads != spec.n_heads:
        small["n_kv_heads"] = 1
    return spec.replace(**small, **SPECS[name])


def _arrays(part: tuple[Norm, object]) -> dict[str, np.ndarray]:
    """A sublayer's parameters by the names its gradients carry."""
    norm, body = part
    out: dict[str, np.ndarray] = {}
    if norm.weights is not None:
        for field in ("scale", "bias"):
            if getattr(norm.weights, field) is not None:
                out[f"norm.{field}"] = getattr(norm.weights, field)
    names = {Attention: {"attn.q": ("wq", "bq"), "attn.k": ("wk", "bk"), "attn.v": ("wv", "bv"),
                         "attn.o": ("wo", "bo")},
             FFN: {"ffn.up": ("w_up", "b_up"), "ffn.gate": ("w_gate", "b_gate"),
                   "ffn.down": ("w_down", "b_down")}}
    if isinstance(body, _Linear):
        out["linear.w"] = body.w
    for prefix, (w, b) in names.get(type(body), {}).items():
        for suffix, field in (("w", w), ("b", b)):
            value = getattr(body.w, field)
            if value is not None:
                out[f"{prefix}.{suffix}"] = value
    return out


def _fd(f, array: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences of f() in every element of `array`, perturbed in place."""
    grad = np.zeros_like(array)
    for index in np.ndindex(array.shape):
        keep = array[index]
        array[index] = keep + h
        up = f()
        array[index] = keep - h
        down = f()
        array[index] = keep
        grad[index] = (up - down) / (2 * h)
    return grad


FD_NOISE = 1e-9  # central differences' rounding at h = 1e-6 in float64: ~1e-10 per element


def _close(got: np.ndarray, fd: np.ndarray) -> bool:
    """Within 1e-6 of the finite differences, relative; a gradient that is zero in exact
    arithmetic (a key bias: the softmax cancels it) within the differences' own noise."""
    return bool(np.linalg.norm(got - fd) <= TOLERANCE * np.linalg.norm(fd) + FD_NOISE)


def _check_stack(spec: Spec | None, sublayer: str, variant: str) -> None:
    o = DepthSweepOptions(depths=(3,), variants=(variant,), sublayer=sublayer, seq_len=4,
                          batch=2, seed=3)
    d = spec.d_model if spec is not None else 6
    causal = spec is not None and spec.family == "decoder"
    layers, x0 = draw_layers(spec, o, d, np.dtype(np.float64), causal, 0.5, 1e-5)
    readout = np.random.default_rng(7).normal(size=x0.shape)
    _, inputs, weights = stack_gradients(layers, variant, x0, readout)
    for n in range(len(layers)):
        x_l = x0.copy()
        for layer in layers[:n]:  # layer l's input, by the forward pass
            x_l = _forward(layer, variant, x_l)
        fd = _fd(lambda: stack_loss(layers[n:], variant, x_l, readout), x_l)
        assert _close(inputs[n], fd), ("dx", n)
        for i, part in enumerate(layers[n]):
            for name, array in _arrays(part).items():
                fd = _fd(lambda: stack_loss(layers, variant, x0, readout), array)
                # a norm residual-no-norm never runs has no gradient: zero
                got = weights[n].get(f"{i}.{name}", np.zeros_like(array))
                assert _close(got, fd), (n, i, name)


def _forward(layer, variant: str, x: np.ndarray) -> np.ndarray:
    from tfcli.analysis.depth.gradients import _part_forward

    for part in layer:
        x, _ = _part_forward(variant, part, x)
    return x


@pytest.mark.parametrize("variant", VARIANTS)
def test_linear_gradients_equal_finite_differences(variant: str) -> None:
    _check_stack(None, "linear", variant)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("sublayer", ["block", "attention", "ffn"])
def test_lesson_gradients_equal_finite_differences(sublayer: str, variant: str) -> None:
    spec = make_spec("gpt").replace(d_model=8, n_heads=2, d_ff=12, init_std=0.3)
    _check_stack(spec, sublayer, variant)


@pytest.mark.parametrize("name", list(SPECS))
def test_every_backward_op_equals_finite_differences(name: str) -> None:
    _check_stack(_spec(name), "block", "pre")


# --- torch autograd on the same weights -----------------------------------------------------------


def _torch_part(torch, spec: Spec, part, variant: str, x, leaves: dict):
    """One sublayer in torch, from the arrays the NumPy stack used (each a leaf tensor that
    collects its gradient, in `leaves` by the array's id)."""
    norm, body = part

    def t(a):
        if a is None:
            return None
        if id(a) not in leaves:
            leaves[id(a)] = torch.from_numpy(a).requires_grad_(True)
        return leaves[id(a)]

    def normed(z):
        w = norm.weights
        scale = None if w is None or w.scale is None else t(w.scale) + (1.0 if norm.offset else 0.0)
        if norm.kind == "rmsnorm":
            y = z / torch.sqrt((z * z).mean(-1, keepdim=True) + norm.eps)
        else:
            c = z - z.mean(-1, keepdim=True)
            y = c / torch.sqrt((c * c).mean(-1, keepdim=True) + norm.eps)
        y = y if scale is None else y * scale
        return y if w is None or w.bias is None else y + t(w.bias)

    def lin(z, w, b):
        y = z @ t(w)
        return y if b is None else y + t(b)

    def attention(z):
        w, (b, n, _) = body.w, z.shape
        heads = lambda y, h: y.reshape(b, n, h, -1).transpose(1, 2)  # noqa: E731
        q, k, v = (heads(lin(z, w.wq, w.bq), spec.n_heads), heads(lin(z, w.wk, w.bk), spec.kv_heads),
                   heads(lin(z, w.wv, w.bv), spec.kv_heads))
        if spec.positions == "rope":
            cos, sin = body._tables(n, np.dtype(np.float64))
            cos, sin, r = t(cos), t(sin), cos.shape[-1]
            def rope(y):
                h = y[..., :r]
                turned = torch.cat([-h[..., r // 2:], h[..., :r // 2]], -1)
                return torch.cat([h * cos + turned * sin, y[..., r:]], -1)
            q, k = rope(q), rope(k)
        g = spec.n_heads // spec.kv_heads
        k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
        scores = q @ k.transpose(-1, -2) * spec.scale
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, n, -1)
        return lin(out, w.wo, w.bo)

    def ffn(z):
        w = body.w
        acts = {"gelu_tanh": lambda y: torch.nn.functional.gelu(y, approximate="tanh"),
                "relu": torch.relu, "swiglu": torch.nn.functional.silu}
        up = lin(z, w.w_up, w.b_up)
        if w.w_gate is not None:
            return lin(acts[spec.activation](lin(z, w.w_gate, w.b_gate)) * up, w.w_down, w.b_down)
        return lin(acts[spec.activation](up), w.w_down, w.b_down)

    if isinstance(body, _Linear):
        f = lambda z: z @ t(body.w)  # noqa: E731
    else:
        f = attention if isinstance(body, Attention) else ffn
    if variant == "pre":
        return x + f(normed(x))
    if variant == "plain":
        return f(normed(x))
    if variant == "residual-no-norm":
        return x + f(x)
    return normed(x + f(x))  # post


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(("name", "sublayer"), [
    ("gpt", "block"), ("llama_gqa", "block"), ("mqa_sinusoidal", "block"),
    ("llama_gqa", "attention"), ("gpt", "ffn"), ("linear", "linear")])
def test_gradients_equal_torch_autograd(torch, name: str, sublayer: str, variant: str) -> None:
    spec = None if name == "linear" else _spec(name)
    o = DepthSweepOptions(depths=(4,), variants=(variant,), sublayer=sublayer, seq_len=5,
                          batch=2, seed=1)
    d = 8 if spec is None else spec.d_model
    layers, x0 = draw_layers(spec, o, d, np.dtype(np.float64), True, 0.5, 1e-5)
    readout = np.random.default_rng(2).normal(size=x0.shape)
    loss, inputs, weights = stack_gradients(layers, variant, x0, readout)
    x = torch.from_numpy(x0.copy()).requires_grad_(True)
    kept, leaves = [], {}
    for layer in layers:
        x.retain_grad()
        kept.append(x)
        for part in layer:
            x = _torch_part(torch, spec, part, variant, x, leaves)
    if variant == "pre":  # the final norm a pre-LN stack ends in
        c = x - x.mean(-1, keepdim=True)
        x = c / torch.sqrt((c * c).mean(-1, keepdim=True) + 1e-5)
    torch_loss = (x * torch.from_numpy(readout)).sum() / np.sqrt(x.numel())
    torch_loss.backward()
    assert abs(torch_loss.item() - loss) <= 1e-12 * max(1.0, abs(loss))
    for n, x_n in enumerate(kept):
        np.testing.assert_allclose(inputs[n], x_n.grad.numpy(), rtol=1e-5, atol=1e-12)
        for i, part in enumerate(layers[n]):
            for key, array in _arrays(part).items():
                leaf = leaves.get(id(array))  # residual-no-norm never reads its norm
                want = None if leaf is None else leaf.grad
                got = weights[n].get(f"{i}.{key}", np.zeros_like(array))
                np.testing.assert_allclose(got, np.zeros_like(array) if want is None
                                           else want.numpy(), rtol=1e-5, atol=1e-12,
                                           err_msg=f"layer {n + 1} {i}.{key}")


# --- the command ----------------------------------------------------------------------------------


def test_depth_sweep_gradients_json_and_table(runner) -> None:
    result = runner.invoke(app, ["depth-sweep", "--depths", "1,8", "--gradients", "-f", "json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)["gradients"]
    assert report["depth"] == 8 and "Xiong et al. 2020" in report["verdict"]
    assert [s["variant"] for s in report["series"]] == ["pre", "post", "plain"]
    assert all(len(s["layers"]) == 8 for s in report["series"])
    layer = report["series"][0]["layers"][0]
    assert layer["layer"] == 1 and layer["input_grad"] > 0 and layer["weight_grad"] > 0
    table = runner.invoke(app, ["depth-sweep", "--depths", "1,8", "--gradients"], env={
        "COLUMNS": "100", "NO_COLOR": "1"})
    assert table.exit_code == 0 and "gradients through depth 8" in table.stdout


def test_plain_gradients_vanish_toward_the_input_and_pre_carries_them(runner) -> None:
    result = runner.invoke(app, ["depth-sweep", "--depths", "32", "--gradients", "-f", "json"])
    series = {s["variant"]: s["layers"] for s in json.loads(result.stdout)["gradients"]["series"]}
    plain, pre = series["plain"], series["pre"]
    assert plain[0]["input_grad"] < 0.1 * plain[-1]["input_grad"]  # vanished by layer 1
    assert 0.5 < pre[0]["input_grad"] / pre[-1]["input_grad"] < 2  # the residual carries it


def test_post_ln_gradients_near_the_output_outgrow_pre_ln_with_depth(runner) -> None:
    """Xiong et al.'s Theorem 1 in the default sweep: the last layer's weight gradient of
    post-LN does not shrink with depth, pre-LN's does (its final norm divides by the growing
    residual stream), so post-LN's exceeds pre-LN's near the output and the gap widens; the
    table and the verdict say so."""
    result = runner.invoke(app, ["depth-sweep", "--gradients", "-f", "json"])
    report = json.loads(result.stdout)["gradients"]
    by_depth = {row["depth"]: row["weight_grad"] for row in report["last_layer_by_depth"]}
    assert sorted(by_depth) == [1, 2, 4, 8, 16, 32, 64]
    series = {s["variant"]: s["layers"] for s in report["series"]}
    assert by_depth[64]["post"] == series["post"][-1]["weight_grad"]  # the deepest stack's own
    gap = {d: g["post"] / g["pre"] for d, g in by_depth.items()}
    assert gap[64] > 1.5 and gap[64] > 1.3 * gap[1]
    assert by_depth[64]["pre"] < 0.8 * by_depth[1]["pre"]  # pre-LN's falls with depth
    assert by_depth[64]["post"] > 0.9 * by_depth[1]["post"]  # post-LN's does not
    assert "the gap grows with depth" in report["verdict"] and "warmup" in report["verdict"]
    table = runner.invoke(app, ["depth-sweep", "--gradients", "--depths", "1,4"],
                          env={"COLUMNS": "120", "NO_COLOR": "1"})
    assert "of the last layer, by the stack's depth" in table.stdout


def test_what_the_backward_pass_does_not_cover_is_refused_by_name(runner) -> None:
    result = runner.invoke(app, ["depth-sweep", "mixtral-8x7b", "--d-model", "32",
                                 "--n-heads", "4", "--n-kv-heads", "2", "--d-ff", "32",
                                 "--depths", "2", "--gradients"])
    assert result.exit_code == 2 and "mixture-of-experts" in result.stderr
    assert "Traceback" not in result.stderr
    long = runner.invoke(app, ["depth-sweep", "gpt2", "--depths", "64", "--seq-len", "512",
                               "--gradients"])
    assert long.exit_code == 2 and "--gradients would keep" in long.stderr


def test_the_chart_and_the_plot_show_the_gradients(runner, tmp_path) -> None:
    png = tmp_path / "g.png"
    result = runner.invoke(app, ["depth-sweep", "--depths", "1,8", "--gradients", "--plot",
                                 str(png)], env={"COLUMNS": "100", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.stderr
    assert "||dL/dW|| per layer at initialisation" in result.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from matplotlib import image

    assert image.imread(png).shape[0] > image.imread(png).shape[1]  # two panels, one above


# --- --weights FILE.npz for the stacked layers ------------------------------------------------------


def _lesson_norm(w: np.ndarray, depth: int) -> float:
    """Exercise 3's residual stack with the learner's W, on the sweep's own X0 (seed 0 draws
    its W first, then X0: the lesson's order)."""
    rng = np.random.default_rng(0)
    rng.normal(scale=0.3, size=(16, 16))  # the draw --weights replaces
    x = rng.normal(size=(1, 6, 16))[0]
    for _ in range(depth):
        c = x - x.mean(-1, keepdims=True)
        x = x + (c / np.sqrt((c * c).mean(-1, keepdims=True) + 1e-5)) @ w
    return float(np.linalg.norm(x, axis=-1).mean())


def test_depth_sweep_takes_the_learners_matrix(runner, tmp_path) -> None:
    w = np.random.default_rng(5).normal(scale=0.2, size=(16, 16))
    np.savez(tmp_path / "w.npz", **{"blocks.*.w": w})
    args = ["depth-sweep", "--sublayer", "linear", "--share-weights", "--d-model", "16",
            "--seq-len", "6", "--weight-scale", "0.3", "--depths", "20", "--seed", "0",
            "--variants", "pre", "-f", "json"]
    result = runner.invoke(app, [*args, "--weights", str(tmp_path / "w.npz")])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    np.testing.assert_allclose(data["points"][0]["norm_mean"], _lesson_norm(w, 20), rtol=1e-12)
    assert data["verdict"].startswith("weights: 1 array(s) from")


def test_depth_sweep_weights_by_engine_path_reach_every_layer(runner, tmp_path) -> None:
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "w.npz", **{"decoder.blocks.*.attn.wq": rng.normal(size=(16, 16)),
                                    "decoder.blocks.*.ffn.w_up": rng.normal(size=(16, 64))})
    base = ["depth-sweep", "--depths", "4", "--gradients", "-f", "json"]
    plain = json.loads(runner.invoke(app, base).stdout)
    given = runner.invoke(app, [*base, "--weights", str(tmp_path / "w.npz")])
    assert given.exit_code == 0, given.stderr
    data = json.loads(given.stdout)
    assert data["points"] != plain["points"] and data["gradients"] != plain["gradients"]
    assert "kept the spec's random draw" in data["verdict"]


@pytest.mark.parametrize(("arrays", "expected"), [
    ({"decoder.blocks.*.attn.wqq": np.zeros((16, 16))}, "did you mean"),
    ({"decoder.blocks.*.attn.wq": np.zeros((16, 8))}, "has shape (16, 8)"),
    ({"decoder.blocks.9.attn.wq": np.zeros((16, 16))}, "is no weight"),  # past --depths 4
])
def test_bad_depth_sweep_weights_are_one_line(runner, tmp_path, arrays, expected) -> None:
    np.savez(tmp_path / "w.npz", **arrays)
    result = runner.invoke(app, ["depth-sweep", "--depths", "4", "--weights",
                                 str(tmp_path / "w.npz")])
    assert result.exit_code == 2 and expected in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_depth_sweep_takes_the_learners_input(runner, tmp_path) -> None:
    """--inputs' embeddings are X0 (and set --batch and --seq-len): the learner's W and X0
    together give Exercise 3's stack on the learner's own arrays, forward and backward."""
    rng = np.random.default_rng(7)
    w, x0 = rng.normal(scale=0.2, size=(16, 16)), rng.normal(size=(2, 5, 16))
    np.savez(tmp_path / "w.npz", **{"blocks.*.w": w})
    np.savez(tmp_path / "x.npz", embeddings=x0)
    args = ["depth-sweep", "--sublayer", "linear", "--share-weights", "--depths", "3",
            "--variants", "pre", "--gradients", "-f", "json", "--weights", str(tmp_path / "w.npz"),
            "--inputs", str(tmp_path / "x.npz")]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["batch"], data["seq_len"]) == (2, 5)
    x = x0
    for _ in range(3):
        c = x - x.mean(-1, keepdims=True)
        x = x + (c / np.sqrt((c * c).mean(-1, keepdims=True) + 1e-5)) @ w
    np.testing.assert_allclose(data["input_norm"], np.linalg.norm(x0, axis=-1).mean(), rtol=1e-12)
    np.testing.assert_allclose(data["points"][0]["norm_mean"], np.linalg.norm(x, axis=-1).mean(),
                               rtol=1e-12)
    assert data["verdict"].startswith("inputs: embeddings (2, 5, 16) from")
    drawn = json.loads(runner.invoke(app, args[:-2]).stdout)
    assert drawn["gradients"]["series"] != data["gradients"]["series"]  # the backward saw it too


@pytest.mark.parametrize(("arrays", "extra", "expected"), [
    ({"tokens": np.zeros((1, 4), dtype=np.int64)}, [], "not tokens"),
    ({"embeddings": np.zeros((1, 4, 8))}, [], "takes (B, N, 16)"),
    ({"embeddings": np.full((1, 4, 16), np.nan)}, [], "inf or NaN"),
    ({"embeddings": np.zeros((1, 4, 16))}, ["--seq-len", "4"], "--seq-len: --inputs"),
    ({"embeddings": np.zeros((1, 4, 16)), "tokens": np.zeros((1, 4), dtype=np.int64)}, [],
     "must hold one of"),
])
def test_bad_depth_sweep_inputs_are_one_line(runner, tmp_path, arrays, extra, expected) -> None:
    np.savez(tmp_path / "x.npz", **arrays)
    result = runner.invoke(app, ["depth-sweep", "--depths", "2", "--inputs",
                                 str(tmp_path / "x.npz"), *extra])
    assert result.exit_code == 2 and expected in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
