//! Snapshots of the safe layer the generator writes for each kind of `@uform` annotation, from small
//! synthetic bindings written the way bindgen writes `rust/sys.rs`.

/// What every synthetic header leans on: the status enum, the handles, the progress type and the views.
const PRELUDE: &str = r#"
// @header types.h
impl uform_status_t {
    #[doc = " Success."]
    pub const uform_status_ok_k: uform_status_t = uform_status_t(0);
    #[doc = " Not final yet."]
    pub const uform_status_deferred_k: uform_status_t = uform_status_t(1);
    #[doc = " Bad input."]
    pub const uform_status_invalid_argument_k: uform_status_t = uform_status_t(7);
}
#[repr(transparent)]
#[doc = " @brief What a fallible function answers.\n @uform enum skip=ok"]
#[derive(Debug, Copy, Clone, Hash, PartialEq, Eq)]
pub struct uform_status_t(pub ::std::os::raw::c_uint);
unsafe extern "C" {
    #[doc = " @brief The name of a status, such as `\"invalid-argument\"`."]
    pub fn uform_status_name(status: uform_status_t) -> *const ::std::os::raw::c_char;
    #[doc = " @brief Parses a status name."]
    pub fn uform_status_parse(name: *const ::std::os::raw::c_char, status: *mut uform_status_t) -> uform_status_t;
}
impl uform_scalar_t {
    #[doc = " Derived."]
    pub const uform_scalar_auto_k: uform_scalar_t = uform_scalar_t(0);
    #[doc = " IEEE 754 binary32. @uform rust=F32"]
    pub const uform_scalar_f32_k: uform_scalar_t = uform_scalar_t(1);
}
#[repr(transparent)]
#[doc = " @brief A scalar type.\n @uform enum"]
#[derive(Debug, Copy, Clone, Hash, PartialEq, Eq)]
pub struct uform_scalar_t(pub ::std::os::raw::c_uint);
#[doc = " @brief A progress handler."]
pub type uform_progress_t = ::std::option::Option<
    unsafe extern "C" fn(context: *mut ::std::os::raw::c_void, completed: usize, total: usize) -> bool,
>;
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct uform_executor_s {
    _unused: [u8; 0],
}
#[doc = " @brief An executor."]
pub type uform_executor_t = *mut uform_executor_s;
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct uform_arena_s {
    _unused: [u8; 0],
}
#[doc = " @brief An arena."]
pub type uform_arena_t = *mut uform_arena_s;
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct uform_outcome_s {
    _unused: [u8; 0],
}
#[doc = " @brief An outcome."]
pub type uform_outcome_t = *mut uform_outcome_s;
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct uform_model_s {
    _unused: [u8; 0],
}
#[doc = " @brief A model."]
pub type uform_model_t = *mut uform_model_s;
"#;

/// The safe layer of `PRELUDE` plus `bindings`, as the header `header` of it, formatted by prettyplease alone
/// so that the snapshots do not depend on the `rustfmt` installed.
fn generate(bindings: &str, header: &str) -> String {
    let sys = format!("{PRELUDE}\n{bindings}");
    let files = uform_gen::safe_layer_with(&sys, uform_gen::pretty)
        .unwrap_or_else(|error| panic!("{error}"));
    files
        .into_iter()
        .find(|file| file.path.ends_with(format!("{header}.rs")))
        .map(|file| file.text)
        .unwrap_or_else(|| panic!("no `{header}.rs` was generated"))
}

#[test]
fn enum_with_skip_rename_and_names() {
    let text = generate(
        r#"
impl uform_precision_t {
    #[doc = " Derived."]
    pub const uform_precision_auto_k: uform_precision_t = uform_precision_t(0);
    #[doc = " IEEE 754 binary32. @uform rust=F32"]
    pub const uform_precision_f32_k: uform_precision_t = uform_precision_t(1);
    #[doc = " Brain float. @uform rust=BF16"]
    pub const uform_precision_bf16_k: uform_precision_t = uform_precision_t(3);
    #[doc = " Intel Sapphire Rapids."]
    pub const uform_precision_intel_sapphire_rapids_k: uform_precision_t = uform_precision_t(4);
    #[doc = " Left out. "]
    pub const uform_precision_hidden_k: uform_precision_t = uform_precision_t(9);
}
#[repr(transparent)]
#[doc = " @brief A precision.\n @uform enum skip=hidden"]
#[derive(Debug, Copy, Clone, Hash, PartialEq, Eq)]
pub struct uform_precision_t(pub ::std::os::raw::c_uint);
unsafe extern "C" {
    #[doc = " @brief The name of a precision, such as `\"bf16\"`."]
    pub fn uform_precision_name(precision: uform_precision_t) -> *const ::std::os::raw::c_char;
    #[doc = " @brief Parses a precision name."]
    pub fn uform_precision_parse(name: *const ::std::os::raw::c_char, precision: *mut uform_precision_t) -> uform_status_t;
}
"#,
        "types",
    );
    insta::assert_snapshot!(text);
}

#[test]
fn enum_print_only_with_acronym() {
    let text = generate(
        r#"
impl uform_gpu_tier_t {
    #[doc = " None at all."]
    pub const uform_gpu_tier_none_k: uform_gpu_tier_t = uform_gpu_tier_t(0);
    #[doc = " NVLink SHARP."]
    pub const uform_gpu_tier_nvls_tree_k: uform_gpu_tier_t = uform_gpu_tier_t(1);
}
#[repr(transparent)]
#[doc = " @brief A tier, reported only.\n @uform enum print-only"]
#[derive(Debug, Copy, Clone, Hash, PartialEq, Eq)]
pub struct uform_gpu_tier_t(pub ::std::os::raw::c_uint);
unsafe extern "C" {
    #[doc = " @brief The name of a tier, such as `\"nvls\"`."]
    pub fn uform_gpu_tier_name(tier: uform_gpu_tier_t) -> *const ::std::os::raw::c_char;
}
"#,
        "types",
    );
    insta::assert_snapshot!(text);
}

#[test]
fn flags() {
    let text = generate(
        r#"
impl uform_outputs_t {
    #[doc = " Pooled rows."]
    pub const uform_outputs_embeddings_k: uform_outputs_t = uform_outputs_t(1);
    #[doc = " Token rows."]
    pub const uform_outputs_states_k: uform_outputs_t = uform_outputs_t(2);
}
#[repr(transparent)]
#[doc = " @brief The surfaces to keep.\n @uform flags"]
#[derive(Debug, Copy, Clone, Hash, PartialEq, Eq)]
pub struct uform_outputs_t(pub ::std::os::raw::c_uint);
"#,
        "types",
    );
    insta::assert_snapshot!(text);
}

/// Structs the config tests share: stats filled by the library, and a nested plain struct.
const STRUCTS: &str = r#"
#[doc = " @brief What a call did."]
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct uform_thing_stats_t {
    #[doc = " Items."]
    pub items: usize,
    #[doc = " Nanoseconds."]
    pub nanoseconds: u64,
}
#[doc = " @brief A nested shape."]
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct uform_shape_t {
    #[doc = " Side; zero takes 16."]
    pub side: usize,
    #[doc = " Rate."]
    pub rate: f32,
}
"#;

#[test]
fn config_with_every_field_kind() {
    let text = generate(
        &format!(
            r#"
// @header model.h
{STRUCTS}
#[doc = " @brief The knobs of a thing.\n @uform config Thing"]
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct uform_thing_args_t {{
    #[doc = " The path, as the OS's bytes.\n  @uform path path_length"]
    pub path: *const ::std::os::raw::c_char,
    #[doc = " Bytes in `path`."]
    pub path_length: usize,
    #[doc = " A name. @uform str name_length"]
    pub name: *const ::std::os::raw::c_char,
    #[doc = " Bytes in `name`."]
    pub name_length: usize,
    #[doc = " The executor; `NULL` runs on the caller."]
    pub executor: uform_executor_t,
    #[doc = " Nodes."]
    pub nodes: *const usize,
    #[doc = " Entries in `nodes`."]
    pub nodes_count: usize,
    #[doc = " The scalar outputs land as."]
    pub scalar: uform_scalar_t,
    #[doc = " The shape."]
    pub shape: uform_shape_t,
    #[doc = " Choices. @uform tape choices"]
    pub choices: *const ::std::os::raw::c_char,
    #[doc = " Bytes in `choices`."]
    pub choices_length: usize,
    #[doc = " Offsets."]
    pub choices_offsets: *const usize,
    #[doc = " Items."]
    pub choices_count: usize,
    #[doc = " Nullable; receives what the call did."]
    pub stats: *mut uform_thing_stats_t,
    #[doc = " Nullable: the arena."]
    pub arena: uform_arena_t,
    #[doc = " Nullable; called with progress."]
    pub progress: uform_progress_t,
    #[doc = " Passed to `progress` untouched."]
    pub progress_context: *mut ::std::os::raw::c_void,
}}
"#
        ),
        "model",
    );
    insta::assert_snapshot!(text);
}

#[test]
fn plain_structs_read_back_and_edges() {
    let text = generate(
        r#"
// @header model.h
#[doc = " @brief A device."]
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct uform_device_t {
    #[doc = " Its name, NUL-terminated."]
    pub name: [::std::os::raw::c_char; 8usize],
    #[doc = " Its scalar."]
    pub scalar: uform_scalar_t,
    #[doc = " Placements."]
    pub placement: [usize; 4usize],
}
#[doc = " @brief Edges as compressed sparse rows."]
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct uform_edges_t {
    #[doc = " Offsets."]
    pub offsets: *const usize,
    #[doc = " Entries in `offsets`."]
    pub offsets_count: usize,
    #[doc = " Ids."]
    pub ids: *const usize,
    #[doc = " Entries in `ids`."]
    pub ids_count: usize,
    #[doc = " Weights."]
    pub weights: *const f32,
    #[doc = " Entries in `weights`."]
    pub weights_count: usize,
}
unsafe extern "C" {
    #[doc = " @brief Fills devices.\n @uform slice devices capacity"]
    pub fn uform_devices(devices: *mut uform_device_t, capacity: usize, count: *mut usize, message: *mut *const ::std::os::raw::c_char) -> uform_status_t;
}
"#,
        "model",
    );
    insta::assert_snapshot!(text);
}

#[test]
fn getters_and_constructors() {
    let text = generate(
        &format!(
            r#"
// @header model.h
{STRUCTS}
#[doc = " @brief The knobs of loading.\n @uform config Load"]
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct uform_load_args_t {{
    #[doc = " The path. @uform path path_length"]
    pub path: *const ::std::os::raw::c_char,
    #[doc = " Bytes in `path`."]
    pub path_length: usize,
    #[doc = " Nullable; called with progress."]
    pub progress: uform_progress_t,
    #[doc = " Passed to `progress` untouched."]
    pub progress_context: *mut ::std::os::raw::c_void,
}}
unsafe extern "C" {{
    #[doc = " @brief Loads a model."]
    pub fn uform_model_load(args: *const uform_load_args_t, model: *mut uform_model_t, message: *mut *const ::std::os::raw::c_char) -> uform_status_t;
    #[doc = " @brief Loads a model from bytes."]
    pub fn uform_model_load_buffer(buffer: *const ::std::os::raw::c_void, length: usize, args: *const uform_load_args_t, model: *mut uform_model_t, message: *mut *const ::std::os::raw::c_char) -> uform_status_t;
    #[doc = " @brief The model's shape."]
    pub fn uform_model_shape(model: uform_model_t, shape: *mut uform_shape_t, message: *mut *const ::std::os::raw::c_char) -> uform_status_t;
    #[doc = " @brief The model's width."]
    pub fn uform_model_width(model: uform_model_t, width: *mut usize, message: *mut *const ::std::os::raw::c_char) -> uform_status_t;
}}
"#
        ),
        "model",
    );
    insta::assert_snapshot!(text);
}

#[test]
fn config_with_bytes_and_a_buffer_constructor() {
    let text = generate(
        r#"
// @header model.h
#[doc = " @brief The knobs of loading from a path or bytes.\n @uform config Load"]
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct uform_load_args_t {
    #[doc = " The path. @uform path path_length"]
    pub path: *const ::std::os::raw::c_char,
    #[doc = " Bytes in `path`."]
    pub path_length: usize,
    #[doc = " The checkpoint's bytes; copied.\n  @uform bytes buffer_length"]
    pub buffer: *const ::std::os::raw::c_void,
    #[doc = " Bytes in `buffer`."]
    pub buffer_length: usize,
    #[doc = " Nodes."]
    pub nodes: *const usize,
    #[doc = " Entries in `nodes`."]
    pub nodes_count: usize,
}
unsafe extern "C" {
    #[doc = " @brief Loads a model from `args->buffer`."]
    pub fn uform_model_load_buffer(args: *const uform_load_args_t, model: *mut uform_model_t, message: *mut *const ::std::os::raw::c_char) -> uform_status_t;
}
"#,
        "model",
    );
    insta::assert_snapshot!(text);
}

#[test]
fn verbs_with_tapes_per_item_paths_and_results() {
    let text = generate(
        &format!(
            r#"
// @header encode.h
{STRUCTS}
impl uform_outputs_t {{
    #[doc = " Pooled rows."]
    pub const uform_outputs_embeddings_k: uform_outputs_t = uform_outputs_t(1);
}}
#[repr(transparent)]
#[doc = " @brief The surfaces to keep.\n @uform flags"]
#[derive(Debug, Copy, Clone, Hash, PartialEq, Eq)]
pub struct uform_outputs_t(pub ::std::os::raw::c_uint);
#[doc = " @brief Rows."]
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct uform_rows_t {{
    #[doc = " Data."]
    pub data: *mut ::std::os::raw::c_void,
}}
#[doc = " @brief Views."]
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct uform_encoded_t {{
    #[doc = " Pooled."]
    pub embeddings: uform_rows_t,
}}
#[doc = " @brief The knobs of encoding.\n @uform config Thing"]
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct uform_thing_args_t {{
    #[doc = " The scalar outputs land as."]
    pub scalar: uform_scalar_t,
    #[doc = " Nullable; receives what the call did."]
    pub stats: *mut uform_thing_stats_t,
}}
unsafe extern "C" {{
    #[doc = " @brief Encodes pixels.\n @uform verb EncodeVerbs\n @uform tape pixels\n @uform per-item heights\n @uform result encoded"]
    pub fn uform_pixels_encode(model: uform_model_t, executor: uform_executor_t, pixels: *const u8, pixels_length: usize, pixels_offsets: *const usize, pixels_count: usize, heights: *const usize, rate: usize, outputs: uform_outputs_t, args: *const uform_thing_args_t, arena: uform_arena_t, encoded: *mut uform_encoded_t, outcome: *mut uform_outcome_t, message: *mut *const ::std::os::raw::c_char) -> uform_status_t;
    #[doc = " @brief Encodes files.\n @uform verb EncodeVerbs\n @uform tape files paths\n @uform result encoded"]
    pub fn uform_files_encode(model: uform_model_t, executor: uform_executor_t, files: *const ::std::os::raw::c_char, files_length: usize, files_offsets: *const usize, files_count: usize, outputs: uform_outputs_t, args: *const uform_thing_args_t, arena: uform_arena_t, encoded: *mut uform_encoded_t, outcome: *mut uform_outcome_t, message: *mut *const ::std::os::raw::c_char) -> uform_status_t;
    #[doc = " @brief Saves a model.\n @uform verb ModelVerbs\n @uform path path_length"]
    pub fn uform_model_save(model: uform_model_t, executor: uform_executor_t, path: *const ::std::os::raw::c_char, path_length: usize, outcome: *mut uform_outcome_t, message: *mut *const ::std::os::raw::c_char) -> uform_status_t;
}}
"#
        ),
        "encode",
    );
    insta::assert_snapshot!(text);
}

#[test]
fn directives_parse_inline_and_multiple() {
    let directives = uform_gen::ir::Directives::parse(
        " IEEE 754. @uform rust=F32\n @uform tape files paths\n @uform result encoded",
    );
    assert_eq!(directives.value("rust").as_deref(), Some("F32"));
    assert_eq!(
        directives.first("tape"),
        Some(&["files".to_owned(), "paths".to_owned()][..])
    );
    assert_eq!(
        directives.first("result"),
        Some(&["encoded".to_owned()][..])
    );
}

#[test]
fn names() {
    assert_eq!(uform_gen::names::type_name("uform_cpu_class_t"), "CPUClass");
    assert_eq!(
        uform_gen::names::type_name("uform_gpu_device_t"),
        "GPUDevice"
    );
    assert_eq!(
        uform_gen::names::type_name("uform_model_load_vram_args_t"),
        "ModelLoadVramArgs"
    );
    assert_eq!(
        uform_gen::names::camel("late_interaction"),
        "LateInteraction"
    );
    assert_eq!(
        uform_gen::names::clean_doc(
            " @brief Makes one.\n @param x The x.\n        more of x.\n Answers it. @uform verb X"
        ),
        "Makes one.\nAnswers it."
    );
}

#[test]
fn a_struct_alias_is_a_second_config_of_the_same_fields() {
    let text = generate(
        r#"
// @header model.h
#[doc = " @brief The knobs of the GPU thing.\n @uform config GpuThing"]
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct uform_gpu_thing_args_t {
    #[doc = " Blocks; zero takes 12."]
    pub depth: usize,
    #[doc = " A seed."]
    pub seed: u64,
}
#[doc = " @brief The knobs of the CPU thing: the same struct.\n @uform config CpuThing"]
pub type uform_cpu_thing_args_t = uform_gpu_thing_args_t;
"#,
        "model",
    );
    assert!(text.contains("pub struct GpuThingConfig"));
    assert!(text.contains("pub struct CpuThingConfig"));
    insta::assert_snapshot!(text);
}
