# Sourced by pipelines/paper_*.sh: the stages shared by both papers' drivers, over the array CONFIGS and the
# command array LSR. grid_train: the configs run after run here (NPROC GPUs each), or LAUNCHER=slurm as one array
# task per pending config (GPUS, TIME, PARTITION, CPUS), waiting for the array; grid_estimate: their GPU-hours.
# GRID_ARGS (optional array): more arguments of lsr-eval grid, e.g. --set KEY=VALUE for every config.
grid_train() {
    local extra=(${GRID_ARGS[@]+"${GRID_ARGS[@]}"})
    if [ "${LAUNCHER:-local}" = slurm ]; then
        "${LSR[@]}" grid "${CONFIGS[@]}" ${extra[@]+"${extra[@]}"} --launcher slurm --gpus "${GPUS:-1}" ${TIME:+--time "$TIME"} \
            ${PARTITION:+--partition "$PARTITION"} ${CPUS:+--cpus "$CPUS"} --wait
    else
        "${LSR[@]}" grid "${CONFIGS[@]}" ${extra[@]+"${extra[@]}"} --launcher local --nproc "${NPROC:-1}"
    fi
}

grid_estimate() {
    local extra=(${GRID_ARGS[@]+"${GRID_ARGS[@]}"})
    "${LSR[@]}" grid "${CONFIGS[@]}" ${extra[@]+"${extra[@]}"} --estimate ${STEP_TIME:+--step-time "$STEP_TIME"} --nproc "${NPROC:-${GPUS:-1}}"
}
