/**
 * @file train.h
 * @brief Training: the mesh that joins hosts, the trainer, its steps, calibration and checkpoints.
 *
 * A trainer lives in one residency, chosen by its constructor: `uform_trainer_init_ram` trains on a RAM
 * executor's threads, `uform_trainer_init_vram` on a VRAM executor's devices; both take the same configuration.
 * Every later call on a trainer takes an executor of the trainer's residency and placement (the same NUMA nodes,
 * or the same devices), else answers `uform_status_invalid_argument_k`; local executors answer
 * `uform_status_unsupported_k`. Builds without a GPU residency answer `uform_status_unsupported_k` to
 * `uform_trainer_init_vram` and to `uform_mesh_bootstrap` over a VRAM executor. A trainer borrows its mesh, so the mesh
 * must outlive every trainer made over it. A trainer serves one call at a time, as executors and arenas do: a call
 * finding another one running finishes at once with `uform_status_contended_k`. Argument structs mirror the
 * configuration field by field: a field left at zero is derived by the library, as each field's comment says.
 */
#ifndef UFORM_TRAIN_H
#define UFORM_TRAIN_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------------------- */
/* Enumerations of the objectives                                                                              */
/* ---------------------------------------------------------------------------------------------------------- */

/**
 * @brief What a trainer optimises.
 * @uform enum
 */
typedef enum uform_objective_t {
    /** The weighted sum of every term the batch has data for, each normalised by its count over the mesh. */
    uform_objective_joint_k = 0,
    /** Masked-byte cross-entropy alone. */
    uform_objective_masking_k = 1,
    /** The contrastive term alone. */
    uform_objective_contrastive_k = 2,
    /** Late-interaction MaxSim InfoNCE alone. */
    uform_objective_late_interaction_k = 3,
    /** Choice cross-entropy alone. */
    uform_objective_choices_k = 4,
    /** Distillation from a teacher's embeddings alone: the step's items with a teacher row. */
    uform_objective_distill_k = 5,
} uform_objective_t;

/** @brief The name of an objective, such as `"late-interaction"`; `NULL` for an unknown value. */
char const *uform_objective_name(uform_objective_t objective);
/** @brief Parses an objective name; answers `uform_status_invalid_argument_k` for an unknown name. */
uform_status_t uform_objective_parse(char const *name, uform_objective_t *objective);

/**
 * @brief Which items serve as a contrastive term's negatives.
 * @uform enum
 */
typedef enum uform_negatives_t {
    /** The other items on the same device. */
    uform_negatives_device_k = 0,
    /** The items of every device, gathered across the mesh. */
    uform_negatives_mesh_k = 1,
    /** The `repel` edges alone. */
    uform_negatives_hard_k = 2,
    /** The gathered items and the `repel` edges, weighted up. */
    uform_negatives_mesh_and_hard_k = 3,
} uform_negatives_t;

/** @brief The name of a negatives choice, such as `"mesh-and-hard"`; `NULL` for an unknown value. */
char const *uform_negatives_name(uform_negatives_t negatives);
/** @brief Parses a negatives name; answers `uform_status_invalid_argument_k` for an unknown name. */
uform_status_t uform_negatives_parse(char const *name, uform_negatives_t *negatives);

/**
 * @brief The pair loss of a contrastive term.
 * @uform enum
 */
typedef enum uform_pair_loss_form_t {
    /** InfoNCE with multiple positives and a learned temperature. */
    uform_pair_loss_form_info_nce_k = 0,
    /** SigLIP's sigmoid loss with a learned scale and bias. */
    uform_pair_loss_form_sigmoid_k = 1,
} uform_pair_loss_form_t;

/** @brief The name of a pair-loss form, such as `"info-nce"`; `NULL` for an unknown value. */
char const *uform_pair_loss_form_name(uform_pair_loss_form_t form);
/** @brief Parses a pair-loss form name; answers `uform_status_invalid_argument_k` for an unknown name. */
uform_status_t uform_pair_loss_form_parse(char const *name, uform_pair_loss_form_t *form);

/**
 * @brief The side an item takes in late interaction.
 * @uform enum
 */
typedef enum uform_late_interaction_side_t {
    /** The item takes no part in late interaction. */
    uform_late_interaction_side_none_k = 0,
    /** The item is a query: its token vectors take the max over a document's. */
    uform_late_interaction_side_query_k = 1,
    /** The item is a document scored against the queries of the batch. */
    uform_late_interaction_side_document_k = 2,
} uform_late_interaction_side_t;

/** @brief The name of a side, such as `"query"`; `NULL` for an unknown value. */
char const *uform_late_interaction_side_name(uform_late_interaction_side_t side);
/** @brief Parses a side name; answers `uform_status_invalid_argument_k` for an unknown name. */
uform_status_t uform_late_interaction_side_parse(char const *name, uform_late_interaction_side_t *side);

/**
 * @brief The in-switch reduction tier a mesh reached; reported only, never chosen.
 * @uform enum print-only
 */
typedef enum uform_multimem_tier_t {
    /** Reductions run over plain rings and trees. */
    uform_multimem_tier_none_k = 0,
    /** NVLink SHARP multimem reductions within a host. */
    uform_multimem_tier_nvls_k = 1,
    /** NVLink SHARP within hosts and trees across them. */
    uform_multimem_tier_nvls_tree_k = 2,
    /** In-network reductions across hosts (CollNet, InfiniBand SHARP). */
    uform_multimem_tier_collnet_k = 3,
} uform_multimem_tier_t;

/** @brief The name of a multimem tier, such as `"nvls"`; `NULL` for an unknown value. There is no parse. */
char const *uform_multimem_tier_name(uform_multimem_tier_t tier);

/* ---------------------------------------------------------------------------------------------------------- */
/* The mesh                                                                                                    */
/* ---------------------------------------------------------------------------------------------------------- */

/** @brief An opaque mesh: the devices of every host of a run, joined for collectives. */
typedef struct uform_mesh_s *uform_mesh_t;

/**
 * @brief How a mesh finds its peers: through a directory every host sees; all-zero is a one-host mesh in the
 * working directory. Over a RAM executor each "host" is one process (a rank): several may run on one machine.
 */
typedef struct uform_mesh_options_t {
    /** This host's index among the hosts of the run, below `host_domain_count`. */
    size_t host_domain_index;
    /** Hosts in the run; zero means one. At most 4096: a larger count answers `uform_status_invalid_argument_k`
     *  at once. */
    size_t host_domain_count;
    /** The shared directory where the hosts meet, as the OS's bytes; empty takes the working directory. It must
     *  exist: a missing one answers `uform_status_io_k`.
     *  @uform path directory_length */
    char const *directory;
    /** Bytes in `directory`. */
    size_t directory_length;
    /** The run's name, UTF-8, naming its files in the directory; empty takes `"uform"`.
     *  @uform str job_length */
    char const *job;
    /** Bytes in `job`. */
    size_t job_length;
    /** Seconds to wait for the peers, and, over a RAM executor, for each later collective; zero takes 600. */
    size_t timeout_seconds;
    /** RAM executors: the address (a name or a numeric address, UTF-8) this host's peers reach it at, where it
     *  listens; empty takes `"127.0.0.1"`, for runs whose processes share one machine. VRAM executors ignore it.
     *  @uform str hostname_length */
    char const *hostname;
    /** Bytes in `hostname`. */
    size_t hostname_length;
} uform_mesh_options_t;

/** @brief What a mesh is. */
typedef struct uform_mesh_description_t {
    /** This host's index. */
    size_t host_domain_index;
    /** Hosts in the run. */
    size_t host_domain_count;
    /** Devices this host contributes. */
    size_t local_devices;
    /** Devices in the whole run. */
    size_t world_devices;
    /** The rank of this host's first device. */
    size_t first_rank;
    /** The in-switch reduction tier reached. */
    uform_multimem_tier_t multimem_tier;
    /** The GPU class every GPU of the run dispatches as. */
    uform_gpu_class_t gpu_class;
} uform_mesh_description_t;

/**
 * @brief Joins the hosts of a run. Blocks until every host has joined or `timeout_seconds` pass
 * (`uform_status_timeout_k`). Over a VRAM executor a host contributes its devices, joined through NCCL; over a RAM
 * executor a host is one process contributing one device (its threads), joined through Gloo over TCP: the
 * description then counts one device per host (`world_devices` the hosts, `first_rank` the index), `multimem_tier`
 * none and `gpu_class` auto. A RAM mesh's hosts agree on a fresh attempt through files in the directory, so a rerun
 * of the same job in the same directory joins afresh, and several jobs share a directory; once every host joined,
 * each removes the files it wrote there. A directory that does not exist, or that this process cannot write in,
 * answers `uform_status_io_k` at once; hosts given different `host_domain_count`s answer
 * `uform_status_invalid_argument_k` where they meet (a host whose index is beyond another's count waits for the
 * timeout). Whoever can write the directory can plant files in it: the mesh reads only regular files there, never
 * through a symbolic link, never blocking on a FIFO, each up to a size its format bounds; anything else under a name
 * the mesh waits for counts as absent, so the wait ends with the timeout, and the timeout holds across every read.
 * A peer that dies while this process writes to it gives the survivors `uform_status_io_k` or
 * `uform_status_timeout_k`, never a SIGPIPE: every thread that calls into the mesh's transport blocks SIGPIPE for
 * the call and discards one raised meanwhile, then restores its own signal mask (threads the transport starts keep
 * it blocked); the process's disposition of SIGPIPE is never changed.
 * Builds without the residency of the executor's kind answer `uform_status_unsupported_k`. A CUDA build loads
 * `libnccl.so.2` at the first VRAM bootstrap, as cuBLASLt is loaded at the first GPU call, so programs without it
 * start and RAM meshes work. A VRAM mesh's hosts (one process each) also meet over Gloo as a RAM mesh's do (the same
 * directory, files and hostname), and then choose how a VRAM trainer's gradients are summed: over NCCL, in device
 * memory, when NCCL loaded on every host and no GPU serves two hosts (NCCL refuses two ranks on one GPU); else staged
 * through pinned host memory over Gloo, which needs one device per host (else `uform_status_unsupported_k`). Either
 * way the description counts every host's devices. A VRAM host's devices must all dispatch as one GPU class (else
 * `uform_status_invalid_argument_k`, naming the device); a VRAM join that outlasts the timeout is aborted.
 */
uform_status_t uform_mesh_bootstrap(uform_executor_t executor, uform_mesh_options_t const *options, uform_mesh_t *mesh,
                                    char const **message);

/** @brief Describes a mesh. */
uform_status_t uform_mesh_describe(uform_mesh_t mesh, uform_mesh_description_t *description, char const **message);

/** @brief Frees a mesh; every trainer made over it must be freed first. */
void uform_mesh_free(uform_mesh_t mesh);

/* ---------------------------------------------------------------------------------------------------------- */
/* The trainer's configuration                                                                                 */
/* ---------------------------------------------------------------------------------------------------------- */

/**
 * @brief The image front-end a trainer builds; all-zero leaves images out. An image's patch budget is the
 * batch's `max_columns_per_row`: an image fills one packed row at most.
 */
typedef struct uform_image_shape_t {
    /** Patch side in pixels; zero leaves images out. */
    size_t patch_side;
    /** Channels; zero takes 3. */
    size_t channels;
} uform_image_shape_t;

/** @brief The video front-end a trainer builds; all-zero leaves video out. */
typedef struct uform_video_shape_t {
    /** Frames per tubelet; zero leaves video out. */
    size_t tubelet_frames;
    /** Frames sampled per second; zero takes 1. */
    float fps;
    /** Frames per clip at most; zero takes 16. */
    size_t max_frames;
    /** Patches per frame at most; zero takes 64. */
    size_t max_patches_per_frame;
} uform_video_shape_t;

/** @brief The audio front-end a trainer builds; all-zero leaves audio out. */
typedef struct uform_audio_shape_t {
    /** Sample rate audio is resampled to; zero leaves audio out. */
    size_t sample_rate;
    /** Mel bins; zero takes 80. */
    size_t mel_bins;
    /** Log-mel frames per patch; zero takes 4. */
    size_t frames_per_patch;
    /** Patches per recording at most; zero takes 1500. */
    size_t max_patches;
} uform_audio_shape_t;

/** @brief The most a step's batch holds per device, which sizes the trainer's buffers once. */
typedef struct uform_batch_shape_t {
    /** Packed token rows per device; zero takes 64. */
    size_t max_rows_per_device;
    /** Items (segments) per device; zero takes `max_rows_per_device * 4`. */
    size_t max_segments_per_device;
    /** Tokens per packed row; zero takes 1024. */
    size_t max_columns_per_row;
    /** Bags per device; zero takes `max_segments_per_device`. */
    size_t max_bags_per_device;
    /** The image front-end. */
    uform_image_shape_t image;
    /** The video front-end. */
    uform_video_shape_t video;
    /** The audio front-end. */
    uform_audio_shape_t audio;
} uform_batch_shape_t;

/** @brief The masked-byte objective. */
typedef struct uform_masking_t {
    /** Fraction of text bytes masked; zero takes 0.15. */
    float ratio;
    /** Mean span length in bytes; zero takes 3; at most 1e6. */
    float mean_span;
    /** Weight in the joint loss; zero takes 1; at most 1e6. */
    float weight;
} uform_masking_t;

/** @brief The contrastive objective. */
typedef struct uform_contrastive_t {
    /** The pair loss. */
    uform_pair_loss_form_t form;
    /** Which items are negatives. */
    uform_negatives_t negatives;
    /** Multiplier of `repel` edges' terms; zero takes 2; at most 1e6. */
    float hard_negative_weight;
    /** Weight in the joint loss; zero takes 1; at most 1e6. */
    float weight;
} uform_contrastive_t;

/** @brief The late-interaction objective. */
typedef struct uform_late_interaction_t {
    /** Columns of token vectors; zero takes 128. */
    size_t token_width;
    /** Weight in the joint loss; zero takes 1; at most 1e6. */
    float weight;
} uform_late_interaction_t;

/** @brief The choice objective. */
typedef struct uform_choices_t {
    /** Temperature groups fitted after training; zero takes 1. */
    size_t groups;
    /** Weight in the joint loss; zero takes 1; at most 1e6. */
    float weight;
} uform_choices_t;

/**
 * @brief The distillation objective (docs/model.md, "Distillation"): over the items with a teacher row (the world's,
 * over a mesh), each anchor's softmax over the others of its student cosines at `student_temperature` is matched to
 * the softmax of its teacher cosines at `teacher_temperature` by KL divergence, so the teacher's width never meets
 * the student's. Each temperature is at least 1e-3 and at most 1e3 once resolved.
 */
typedef struct uform_distill_t {
    /** The student's temperature; zero takes 0.05. */
    float student_temperature;
    /** The teacher's temperature; zero takes 0.05. */
    float teacher_temperature;
    /** Weight in the joint loss; zero takes 1; at most 1e6. */
    float weight;
} uform_distill_t;

/** @brief The optimiser's schedule: AdamW, linear warm-up then cosine decay, gradient clipping. */
typedef struct uform_schedule_t {
    /** Steps in all; zero takes 10000. */
    size_t steps;
    /** Warm-up steps; zero takes `steps / 100`. */
    size_t warmup_steps;
    /** Peak learning rate; zero takes 1e-3; at most 1. */
    float learning_rate;
    /** Final learning rate; zero takes `learning_rate / 100`; at most `learning_rate`. */
    float min_learning_rate;
    /** Decoupled weight decay; zero takes 0.01; at most 1. */
    float weight_decay;
    /** Gradient norm to clip at; zero takes 1. */
    float clip_norm;
} uform_schedule_t;

/** @brief An opaque trainer. */
typedef struct uform_trainer_s *uform_trainer_t;

/**
 * @brief The knobs of `uform_trainer_init_vram`; all-zero is the default.
 * @uform config TrainerInitVram
 */
typedef struct uform_trainer_init_vram_args_t {
    /** The mesh to train across; `NULL` trains on the executor's devices alone. */
    uform_mesh_t mesh;
    /** A checkpoint to start from, as the OS's bytes; empty starts from seeded weights, and then the
     *  geometry fields below apply. @uform path checkpoint_length */
    char const *checkpoint;
    /** Bytes in `checkpoint`. */
    size_t checkpoint_length;
    /** Trunk blocks; zero takes 12. */
    size_t depth;
    /** Trunk width; zero takes 512. */
    size_t hidden;
    /** Attention heads; zero takes `hidden / 64`. */
    size_t heads;
    /** Feed-forward width; zero takes `hidden * 3`. */
    size_t ffn_hidden;
    /** Embedding columns; zero takes `hidden`. */
    size_t dimensions;
    /** The objective. */
    uform_objective_t objective;
    /** The batch's bounds and the front-ends. */
    uform_batch_shape_t batch;
    /** The masked-byte term. */
    uform_masking_t masking;
    /** The contrastive term. */
    uform_contrastive_t contrastive;
    /** The late-interaction term. */
    uform_late_interaction_t late_interaction;
    /** The choice term. */
    uform_choices_t choices;
    /** The distillation term. */
    uform_distill_t distill;
    /** The optimiser's schedule. */
    uform_schedule_t schedule;
    /** Seed of the weights, the masking and the sampling; the same seed gives the same run. */
    uint64_t seed;
} uform_trainer_init_vram_args_t;

/**
 * @brief Makes a trainer on a VRAM executor's devices. Starting from a checkpoint, the geometry fields (`depth`,
 * `hidden`, `heads`, `ffn_hidden`, `dimensions`, `late_interaction.token_width`, `choices.groups` and the
 * front-ends' shape fields) are taken from it: each may be left at zero or name the checkpoint's value, and any other
 * value answers `uform_status_invalid_argument_k`.
 *
 * The configuration is checked exactly as `uform_trainer_init_ram` checks it (the same statuses and messages) before
 * the executor's kind, so a process without a device (no GPU residency in the build, or no GPU on the machine, and
 * so a RAM executor passed here) learns of a bad configuration first, and of a good one answers
 * `uform_status_unsupported_k`, naming the missing GPU. On a CUDA build with a GPU, the trainer keeps its weights,
 * gradients and AdamW moments on the executor's device and runs the RAM trainer's step (the same terms, schedule,
 * clipping and update maths) with the step's dense work there; `uform_trainer_save` copies the tensors to the host
 * once and writes the same checkpoint format, which either residency loads and resumes. An executor of more than one
 * device answers `uform_status_unsupported_k` (data parallelism over one executor's devices is not built yet): for
 * several GPUs, give each its process and join them in a `mesh` (one device per host), over which the trainer runs
 * the RAM mesh's step (the configuration agreed, rank 0's weights broadcast, negatives and normalisations gathered,
 * stats equal on every rank) and sums its gradients in buckets of a fixed order after the backward, over NCCL or
 * staged through host memory as the mesh chose (`uform_mesh_bootstrap`).
 */
uform_status_t uform_trainer_init_vram(uform_executor_t executor, uform_trainer_init_vram_args_t const *args,
                                       uform_trainer_t *trainer, char const **message);

/**
 * @brief The knobs of `uform_trainer_init_ram`: the same struct as `uform_trainer_init_vram`'s, so the two cannot
 * drift; all-zero is the default. `mesh`, when set, is a mesh bootstrapped over a RAM executor: the trainer is then
 * one rank of a data-parallel run, one process per rank, and every rank calls each verb in the same order. At
 * construction rank 0's weights, moments and step count are broadcast to every rank, so the ranks start equal
 * whatever each loaded (the same seed or checkpoint on every rank is the plain way); a run resumed from a checkpoint
 * thus takes rank 0's weights and step count, and AdamW's moments restart (a checkpoint holds none). The ranks also
 * compare their configurations there: ranks that disagree on the objective, a term's settings, the schedule, the
 * seed or the model's shape all answer `uform_status_invalid_argument_k` naming the setting, and the mesh stays fit
 * for the next trainer (several may be made over one mesh, one after another). A step's items are the rank's
 * share of the batch: the world's items are every rank's, rank by rank. Bag ids are global (items of one bag on two
 * ranks are positives of each other); edges name the rank's own items, by their index in the rank's step. Masks are
 * drawn by an item's index among the world's items, so two ranks with B/2 items each take the same step as one
 * process with B. Every term is normalised by its count over the mesh, and the gradients are summed over the ranks
 * before the norm, the clip and AdamW, so the weights stay equal on every rank; the stats' loss, terms and gradient
 * norm are the mesh's, equal on every rank, while `items` and `tokens` (and the embeddings) are the rank's own.
 * `mesh` and `mesh-and-hard` negatives score each anchor against the world's items (the embeddings, and the token
 * vectors of late interaction, gathered; their gradients summed back to the owners before the backward); `device`
 * and `hard` keep the candidates to the rank's own items. `uform_trainer_save` and `uform_trainer_calibrate` involve
 * no peer: any rank may save alone (the weights are equal), and a calibration fits the calling rank's temperatures
 * only. A rank that fails or stops a step (a progress handler's cancel, a refused item) leaves its peers waiting in
 * a collective until the mesh's timeout, which they answer with `uform_status_timeout_k` (or `uform_status_io_k`
 * when the connection closes first); the mesh is then broken.
 * @uform config TrainerInitRam
 */
typedef uform_trainer_init_vram_args_t uform_trainer_init_ram_args_t;

/**
 * @brief Makes a trainer on a RAM executor's threads, its weights, gradients and moments in host memory. The
 * configuration and the checkpoint's geometry follow `uform_trainer_init_vram`.
 */
uform_status_t uform_trainer_init_ram(uform_executor_t executor, uform_trainer_init_ram_args_t const *args,
                                      uform_trainer_t *trainer, char const **message);

/**
 * @brief Frees a trainer, waiting for its calls. Answers `uform_status_contended_k`, freeing nothing, when
 * called from a progress handler of one of its calls (see `uform_progress_t`).
 */
uform_status_t uform_trainer_free(uform_trainer_t trainer);

/* ---------------------------------------------------------------------------------------------------------- */
/* Steps                                                                                                       */
/* ---------------------------------------------------------------------------------------------------------- */

/**
 * @brief A set of weighted edges between a step's items, as compressed sparse rows: item `i`'s neighbours
 * are `ids[offsets[i]]` up to `ids[offsets[i + 1]]`. All-zero is no edges.
 */
typedef struct uform_edges_t {
    /** Ascending positions in `ids`, one per item plus one; empty for no edges. */
    size_t const *offsets;
    /** Entries in `offsets`: zero or the step's items plus one. */
    size_t offsets_count;
    /** Neighbour item indices, each below the step's items and never the item itself. */
    size_t const *ids;
    /** Entries in `ids`: `offsets[offsets_count - 1]`. */
    size_t ids_count;
    /** Per-edge weights, finite and positive; empty weighs every edge 1. */
    float const *weights;
    /** Entries in `weights`: zero or `ids_count`. */
    size_t weights_count;
} uform_edges_t;

/** @brief The relations of a step's items beyond their bags. */
typedef struct uform_relations_t {
    /** Positives with graded strength. */
    uform_edges_t attract;
    /** Hard negatives. */
    uform_edges_t repel;
    /** Pairs left out of the loss. */
    uform_edges_t ignore;
} uform_relations_t;

/** @brief What `uform_trainer_step` did, filled once the call is final. */
typedef struct uform_trainer_step_stats_t {
    /** The step's index, counted from zero. */
    size_t step;
    /** The joint loss. */
    float loss;
    /** The masked-byte term, zero when absent. */
    float masking_loss;
    /** The contrastive term, zero when absent. */
    float contrastive_loss;
    /** The late-interaction term, zero when absent. */
    float late_interaction_loss;
    /** The choice term, zero when absent. */
    float choices_loss;
    /** The distillation term, zero when absent. */
    float distill_loss;
    /** The gradient norm before clipping. */
    float gradient_norm;
    /** The learning rate applied. */
    float learning_rate;
    /** Items in the step. */
    size_t items;
    /** Tokens through the trunk. */
    size_t tokens;
    /** Wall time of the step in nanoseconds. */
    uint64_t nanoseconds;
} uform_trainer_step_stats_t;

/**
 * @brief The knobs of `uform_trainer_step`; all-zero is a step whose items are all in separate bags.
 * @uform config TrainerStep
 */
typedef struct uform_trainer_step_args_t {
    /** Each item's bag: items in the same bag are positives; empty puts each item in its own. A bag id is a label,
     *  compared only for equality (across the mesh's ranks too): every `size_t` value is a valid id. */
    size_t const *bags;
    /** Entries in `bags`: zero or the step's items. */
    size_t bags_count;
    /** Edges between the items. */
    uform_relations_t relations;
    /** Each item's late-interaction side; empty takes none for all. */
    uform_late_interaction_side_t const *sides;
    /** Entries in `sides`: zero or the step's items. */
    size_t sides_count;
    /** Each item's legal choice bytes, a tape of one item per step item (empty for items without choices),
     *  or all-empty for no choices. @uform tape choices */
    char const *choices;
    /** Bytes in `choices`. */
    size_t choices_length;
    /** `choices_count + 1` offsets into `choices`. */
    size_t const *choices_offsets;
    /** Items of the `choices` tape: zero or the step's items. */
    size_t choices_count;
    /** Each item's target probabilities, one per legal choice, finite, non-negative and summing to one within
     *  1e-5 (their F32 sum), a tape shaped as `choices`.
     *  @uform tape choice_targets */
    float const *choice_targets;
    /** Values in `choice_targets`. */
    size_t choice_targets_length;
    /** `choice_targets_count + 1` offsets into `choice_targets`, equal to `choices_offsets`. */
    size_t const *choice_targets_offsets;
    /** Items of the `choice_targets` tape: equal to `choices_count`. */
    size_t choice_targets_count;
    /** The teacher's embedding of each item, row-major, `teacher_width` finite values per item; empty for a step
     *  without a teacher. An all-zero row says the item has no teacher (an image in a joint step): it takes no part
     *  in distillation. Rows need not be unit: the term compares their cosines. Given to a trainer whose objective
     *  has no distillation term (neither joint nor distill), they are refused with `uform_status_invalid_argument_k`.
     */
    float const *teacher;
    /** Values in `teacher`: zero or the step's items times `teacher_width`. */
    size_t teacher_count;
    /** Columns of a teacher row: nonzero with rows, zero without; at most 65536. It may change from step to step,
     *  but over a mesh the ranks with rows in one step name the same width. */
    size_t teacher_width;
    /** Nullable; receives what the step did. */
    uform_trainer_step_stats_t *stats;
    /** Nullable: the arena that receives the pooled embeddings the loss scored, in F32. */
    uform_arena_t arena;
    /** Nullable; called with the step's units of work completed and in all: micro-batches, and on a RAM trainer its
     *  forward and backward (1 then 2 of 2); answering stop before the update cancels the step with no weight changed.
     */
    uform_progress_t progress;
    /** Passed to `progress` untouched. */
    void *progress_context;
} uform_trainer_step_args_t;

/**
 * @brief Runs one optimiser step over a batch of items: `modalities[i]` says what item `i` of `contents`
 * holds (text bytes, or the path of a media file). A step with nothing to learn from (no items, only empty texts,
 * or, over a mesh, no term with a unit on any rank) answers `uform_status_invalid_argument_k` with no weight, moment
 * or step count changed: the schedule does not advance. Over a mesh a rank may bring no items while its peers bring
 * some. A step whose update would make a weight or moment non-finite answers `uform_status_corrupt_k`, changing
 * nothing, as a step whose loss or gradient is not finite does. Teacher rows are checked before anything runs: a
 * count that is not the items times the width answers `uform_status_shape_mismatch_k`, a NaN or infinite value
 * `uform_status_invalid_argument_k`; a `distill` objective's step of one process without two items with a teacher
 * has no unit and is refused as above, and over a mesh the distillation term scores every rank's items with a
 * teacher (their embeddings and rows gathered), normalised by the mesh's count of anchors; ranks whose widths differ
 * all answer `uform_status_invalid_argument_k`, nothing changed.
 * @param embeddings Nullable; receives the scored embeddings when `args->arena` is set, else empty rows.
 * @uform verb TrainVerbs
 * @uform per-item modalities
 * @uform tape contents
 * @uform result embeddings
 */
uform_status_t uform_trainer_step(uform_trainer_t trainer, uform_executor_t executor,
                                  uform_modality_t const *modalities, char const *contents, size_t contents_length,
                                  size_t const *contents_offsets, size_t contents_count,
                                  uform_trainer_step_args_t const *args, uform_rows_t *embeddings,
                                  uform_outcome_t *outcome, char const **message);

/* ---------------------------------------------------------------------------------------------------------- */
/* Calibration                                                                                                 */
/* ---------------------------------------------------------------------------------------------------------- */

/** @brief What `uform_trainer_calibrate` did, filled once the call is final. */
typedef struct uform_trainer_calibrate_stats_t {
    /** Held-out items scored. */
    size_t items;
    /** Tokens through the trunk, each item's CHOOSE token included. */
    size_t tokens;
    /** Temperature groups fitted: those with at least one item. The others keep their temperature. */
    size_t groups_fitted;
    /** The items' mean choice cross-entropy at temperature 1, as a step scores choices. */
    float loss_before;
    /** The items' mean choice cross-entropy at the fitted temperatures: at most `loss_before`, up to rounding. */
    float loss_after;
    /** Wall time of the call in nanoseconds. */
    uint64_t nanoseconds;
} uform_trainer_calibrate_stats_t;

/**
 * @brief The knobs of `uform_trainer_calibrate`; all-zero puts every item in temperature group 0.
 * @uform config TrainerCalibrate
 */
typedef struct uform_trainer_calibrate_args_t {
    /** Each item's temperature group, below the trainer's `choices.groups`; empty puts all in 0. */
    size_t const *temperature_groups;
    /** Entries in `temperature_groups`: zero or the number of items. */
    size_t temperature_groups_count;
    /** Nullable; receives what the call did. */
    uform_trainer_calibrate_stats_t *stats;
    /** Nullable; called with items completed and items in all. */
    uform_progress_t progress;
    /** Passed to `progress` untouched. */
    void *progress_context;
} uform_trainer_calibrate_args_t;

/**
 * @brief Fits each temperature group's `T_g` on held-out choice items, the model frozen (temperature scaling,
 * docs/model.md's "Choices"); the checkpoints `uform_trainer_save` writes from then on carry the fitted temperatures.
 *
 * Item `i` is the text `texts[i]` followed by CHOOSE, its legal bytes `choices[i]` (at least one, distinct), and its
 * labels `targets[i]`: one finite non-negative F32 per legal byte, summing to one within 1e-5. Any number of items
 * may be given (they need not fit one step's batch), each text plus its CHOOSE token within the batch's
 * `max_columns_per_row` (`uform_status_limit_exceeded_k` otherwise). Groups without items keep their temperature:
 * 1 for seeded weights, else the starting checkpoint's or an earlier calibration's. Calibration changes no weight
 * and no step count. A trainer without choices (a checkpoint without the byte head) answers
 * `uform_status_unsupported_k`.
 * @uform verb TrainVerbs
 * @uform tape texts
 * @uform tape choices
 * @uform tape targets
 */
uform_status_t uform_trainer_calibrate(uform_trainer_t trainer, uform_executor_t executor, char const *texts,
                                       size_t texts_length, size_t const *texts_offsets, size_t texts_count,
                                       char const *choices, size_t choices_length, size_t const *choices_offsets,
                                       size_t choices_count, float const *targets, size_t targets_length,
                                       size_t const *targets_offsets, size_t targets_count,
                                       uform_trainer_calibrate_args_t const *args, uform_outcome_t *outcome,
                                       char const **message);

/* ---------------------------------------------------------------------------------------------------------- */
/* Checkpoints                                                                                                 */
/* ---------------------------------------------------------------------------------------------------------- */

/**
 * @brief Writes the trainer's weights as a checkpoint of docs/model.md's format to `path` (the OS's bytes),
 * atomically: to a temporary file renamed into place.
 * @uform verb TrainVerbs
 * @uform path path_length
 */
uform_status_t uform_trainer_save(uform_trainer_t trainer, uform_executor_t executor, char const *path,
                                  size_t path_length, uform_outcome_t *outcome, char const **message);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* UFORM_TRAIN_H */
