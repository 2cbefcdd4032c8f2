# Sourced by pipelines/paper_*.sh: the stages shared by both papers' drivers, over the array CONFIGS and the
# command array LSR. grid_train: the configs run after run here (NPROC GPUs each), or LAUNCHER=slurm as one array
# task per pending config (GPUS, TIME, PARTITION, CPUS), waiting for the array; grid_estimate: their GPU-hours.
grid_train() {
    if [ "${LAUNCHER:-local}" = slurm ]; then
        "${LSR[@]}" grid "${CONFIGS[@]}" --launcher slurm --gpus "${GPUS:-1}" ${TIME:+--time "$TIME"} \
            ${PARTITION:+--partition "$PARTITION"} ${CPUS:+--cpus "$CPUS"} --wait
    else
        "${LSR[@]}" grid "${CONFIGS[@]}" --launcher local --nproc "${NPROC:-1}"
    fi
}

grid_estimate() {
    "${LSR[@]}" grid "${CONFIGS[@]}" --estimate ${STEP_TIME:+--step-time "$STEP_TIME"} --nproc "${NPROC:-${GPUS:-1}}"
}
