"""Active parameters per token of the bundled mixture-of-experts specs, derived by hand (the
totals are tests/parity/test_totals.py): every parameter but the routed experts a token does
not run."""

from __future__ import annotations

from tfcli.analysis.params_report import build_params_report
from tfcli.spec.counts import inactive_expert_parameters, total_parameters
from tfcli.sources import load_spec


def test_deepseek_active_parameters_per_token_by_hand() -> None:
    """Active = every parameter but the routed experts a token does not run (the router and
    the shared experts run on every token; e_score_correction_bias is a buffer, counted 0).

    DeepSeek-V3, d 7168, 128 heads of 128 + 64, values 128. Attention: q_a (7168, 1536) +
    q_a_norm 1536 + q_b (1536, 128 x 192) + kv_a (7168, 512 + 64) + kv_a_norm 512 + kv_b
    (512, 128 x 256) + o (128 x 128, 7168) = 11,010,048 + 1,536 + 37,748,736 + 4,128,768 + 512
    + 16,777,216 + 117,440,512 = 187,107,328; two block norms 14,336. Dense blocks (3): SwiGLU
    3 x 7168 x 18432 = 396,361,728. MoE blocks (58): router (7168, 256) = 1,835,008; shared
    expert 3 x 7168 x 2048 = 44,040,192; 8 routed experts of 44,040,192 = 352,321,536.
    3 x (187,107,328 + 14,336 + 396,361,728) + 58 x (187,107,328 + 14,336 + 1,835,008 +
    44,040,192 + 352,321,536) = 1,750,450,176 + 33,948,467,200; + embedding and head
    2 x 129,280 x 7168 = 1,853,358,080 + final norm 7,168 = 37,552,282,624.

    DeepSeek-V2-Lite, d 2048, 16 heads of 128 + 64, values 128, no query bottleneck.
    Attention: q (2048, 16 x 192) + kv_a (2048, 576) + kv_a_norm 512 + kv_b (512, 16 x 256) +
    o (16 x 128, 2048) = 6,291,456 + 1,179,648 + 512 + 2,097,152 + 4,194,304 = 13,763,072;
    block norms 4,096. Dense block (1): 3 x 2048 x 10944 = 67,239,936. MoE blocks (26): router
    (2048, 64) = 131,072; shared experts 3 x 2048 x 2816 = 17,301,504; 6 routed of 3 x 2048 x
    1408 = 8,650,752 each = 51,904,512. 1 x 81,007,104 + 26 x 83,104,256 = 2,241,717,760; +
    2 x 102,400 x 2048 = 419,430,400 + 2,048 = 2,661,150,208.
    """
    v3_attn = (7168 * 1536 + 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 + 512 * 128 * 256
               + 128 * 128 * 7168)
    assert v3_attn == 187_107_328
    v3_expert = 3 * 7168 * 2048
    v3_dense = v3_attn + 2 * 7168 + 3 * 7168 * 18432
    v3_moe = v3_attn + 2 * 7168 + 7168 * 256 + v3_expert + 8 * v3_expert
    v3_active = 3 * v3_dense + 58 * v3_moe + 2 * 129_280 * 7168 + 7168
    v2_attn = 2048 * 16 * 192 + 2048 * 576 + 512 + 512 * 16 * 256 + 16 * 128 * 2048
    assert v2_attn == 13_763_072
    v2_dense = v2_attn + 2 * 2048 + 3 * 2048 * 10944
    v2_moe = v2_attn + 2 * 2048 + 2048 * 64 + 3 * 2048 * 2816 + 6 * 3 * 2048 * 1408
    v2_active = v2_dense + 26 * v2_moe + 2 * 102_400 * 2048 + 2048
    assert (v3_active, v2_active) == (37_552_282_624, 2_661_150_208)
    for bundled, active in (("deepseek-v3", v3_active), ("deepseek-v2-lite", v2_active)):
        spec = load_spec(bundled)
        assert total_parameters(spec) - inactive_expert_parameters(spec) == active
        assert build_params_report(spec).to_dict()["active"] == active


def test_qwen_moe_active_parameters_per_token_by_hand() -> None:
    """Qwen3-30B-A3B: attention q (2048, 4096), k and v (2048, 512), o (4096, 2048), q/k norms
    (128,) each = 18,874,624; router (2048, 128); 8 experts of 3 x 2048 x 768 = 4,718,592.
    Per block 18,874,624 + 4,096 + 262,144 + 37,748,736 = 56,889,600; x 48 = 2,730,700,800;
    + embedding and head 2 x 151,936 x 2048 = 622,329,856 + final norm 2,048 = 3,353,032,704.

    Qwen1.5-MoE-A2.7B: attention 4 x 2048^2 + q, k, v biases 3 x 2048 = 16,783,360; router
    (2048, 60); 4 experts of 3 x 2048 x 1408 = 8,650,752; the shared expert 3 x 2048 x 5632 =
    34,603,008 and its gate 2,048. Per block 16,783,360 + 4,096 + 122,880 + 34,603,008 +
    34,605,056 = 86,118,400; x 24 = 2,066,841,600; + 622,329,856 + 2,048 = 2,689,173,504.
    """
    qwen3 = 18_874_624 + 4_096 + 2048 * 128 + 8 * 3 * 2048 * 768
    assert qwen3 == 56_889_600
    qwen3_active = 48 * qwen3 + 2 * 151_936 * 2048 + 2048
    qwen15 = 16_783_360 + 4_096 + 2048 * 60 + 4 * 3 * 2048 * 1408 + 3 * 2048 * 5632 + 2048
    assert qwen15 == 86_118_400
    qwen15_active = 24 * qwen15 + 2 * 151_936 * 2048 + 2048
    assert (qwen3_active, qwen15_active) == (3_353_032_704, 2_689_173_504)
    for bundled, active in (("qwen3-30b-a3b", qwen3_active), ("qwen1.5-moe-a2.7b", qwen15_active)):
        spec = load_spec(bundled)
        assert total_parameters(spec) - inactive_expert_parameters(spec) == active
        assert build_params_report(spec).to_dict()["active"] == active
