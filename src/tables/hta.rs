//! Holistic Trace Analysis (HTA 0.5.0)'s kernel types, the one rule of HTA's that SQL cannot
//! say as plainly: the `temporal_breakdown`, `kernel_breakdown`, `comm_comp_overlap` and
//! `idle_breakdown` queries reproduce HTA's breakdowns of a PyTorch trace with it (the SQL
//! function `hta_kernel_type(name)`, [`crate::engine::functions`]).
//!
//! HTA (`hta/utils/utils.py`) types a GPU event by its name, first match wins:
//! * `COMMUNICATION`: the name starts with `nccl` and holds `Kernel` after it;
//! * `MEMORY`: it starts with `Memcpy`, `Memset` or `dma`;
//! * `COMPUTATION`: none of the above, and it holds neither `Memcpy` nor `Sync`;
//! * `OTHER`: the rest (a kernel named after a copy or a synchronisation).

/// HTA's type of a GPU event named `name`.
pub fn hta_kernel_type(name: &str) -> &'static str {
    if name.strip_prefix("nccl").is_some_and(|rest| rest.contains("Kernel")) {
        "COMMUNICATION"
    } else if ["Memcpy", "Memset", "dma"].iter().any(|p| name.starts_with(p)) {
        "MEMORY"
    } else if name.contains("Memcpy") || name.contains("Sync") {
        "OTHER"
    } else {
        "COMPUTATION"
    }
}

#[cfg(test)]
mod tests {
    use super::hta_kernel_type;

    #[test]
    fn types_follow_htas_first_match() {
        assert_eq!(hta_kernel_type("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"), "COMMUNICATION");
        assert_eq!(hta_kernel_type("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)"), "COMMUNICATION");
        assert_eq!(hta_kernel_type("Memcpy DtoD (Device -> Device)"), "MEMORY");
        assert_eq!(hta_kernel_type("Memset (Device)"), "MEMORY");
        assert_eq!(hta_kernel_type("void at::native::vectorized_elementwise_kernel<4>"), "COMPUTATION");
        assert_eq!(hta_kernel_type("Event Sync"), "OTHER");
        assert_eq!(hta_kernel_type("void cub::DeviceMemcpy_kernel"), "OTHER");
        // A name that starts with nccl but is no NCCL kernel is computation.
        assert_eq!(hta_kernel_type("nccl_setup"), "COMPUTATION");
    }
}
