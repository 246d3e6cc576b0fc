"""The code registry: each rule code and the module (family.file) that holds its rule.

Codes are assigned here once; moving a rule to another file or family changes its row, never its code.
A family is a package under rules/; the `environment` family checks the machine (`rlcompat doctor`), the others
check files (`scan`, `fix`).
"""

from __future__ import annotations

ENVIRONMENT_FAMILY = "environment"

CODES: dict[str, str] = {
    "RLC001": "meta.unused_suppression",
    "RLC002": "meta.unread_shell_command",
    "RLC101": "dtype.torch_bfloat16_dtype",
    "RLC102": "dtype.bf16_dtype_string",
    "RLC103": "dtype.bf16_flag",
    "RLC104": "dtype.rollout_bf16_dtype",
    "RLC105": "dtype.fsdp_bf16_param_dtype",
    "RLC106": "dtype.dead_fsdp_dtype_key",
    "RLC107": "dtype.bf16_cli_and_config",
    "RLC201": "attention.flash_attention_implementation",
    "RLC202": "attention.use_flash_attention_2_flag",
    "RLC203": "attention.unguarded_flash_attn_import",
    "RLC204": "attention.flash_attention_setting",
    "RLC206": "attention.remove_padding_vision_flash",
    "RLC301": "triton_compile.triton_shared_memory",
    "RLC302": "triton_compile.triton_atomic_below_sm70",
    "RLC303": "triton_compile.triton_bf16_in_kernel",
    "RLC304": "triton_compile.torch_compile_below_sm70",
    "RLC305": "triton_compile.liger_kernel_below_sm70",
    "RLC306": "triton_compile.torch_compile_switch_default",
    "RLC351": "triton_compile.fsdp_torch_compile",
    "RLC352": "triton_compile.dead_torch_compile_key",
    "RLC353": "triton_compile.fused_kernels_triton",
    "RLC354": "triton_compile.liger_kernel",
    "RLC401": "rollout.rollout_engine_unsupported",
    "RLC402": "rollout.rollout_compiled_graphs",
    "RLC403": "rollout.fp8_rollout_quantization",
    "RLC501": "environment.torch_wheel_lacks_arch",
    "RLC502": "environment.torch_cpu_only_build",
    "RLC503": "environment.flash_attn_unsupported_gpu",
    "RLC504": "environment.flash_attn_3_unsupported_gpu",
    "RLC505": "environment.flash_attn_4_unsupported_gpu",
    "RLC506": "environment.vllm_unsupported_gpu",
    "RLC507": "environment.sglang_unsupported_gpu",
    "RLC508": "environment.liger_kernel_pre_ampere",
    "RLC509": "environment.triton_too_old_for_gpu",
    "RLC510": "environment.nvcc_cannot_target_gpu",
    "RLC511": "environment.nvcc_torch_cuda_mismatch",
    "RLC512": "environment.driver_too_old_for_torch",
    "RLC513": "environment.verl_known_hazards",
    "RLC514": "environment.torch_does_not_import",
}
