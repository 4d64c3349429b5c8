/*
 * The few entry points of ONNX Runtime's C API that bench-vs-ort calls,
 * declared here because no package this project installs from ships
 * onnxruntime_c_api.h (Debian has no ONNX Runtime; the npm package
 * onnxruntime-node ships only the shared library).
 *
 * How the C API is reached: the library exports one symbol,
 * OrtGetApiBase(), returning a table of two functions, GetApi(version) and
 * GetVersionString(). GetApi returns the API table, a struct of function
 * pointers (struct OrtApi) to which each release only appends, so the
 * position ("slot") of a function never changes; GetApi returns NULL for a
 * version the library does not serve. Every slot below exists in API
 * version 8, the version bench-vs-ort asks for. The slot numbers are the
 * functions' positions in the documented struct, counted from 0.
 *
 * Every function but the Release ones and GetErrorMessage returns an
 * OrtStatus pointer: NULL on success, else an error whose text
 * GetErrorMessage gives and which ReleaseStatus frees.
 *
 * Adding a call: add its slot here with its position in struct OrtApi and
 * a typedef of its signature, and call it through ort_fn() in
 * bench_vs_ort.c.
 */
#ifndef EDGEFIT_BENCH_ORT_SLOTS_H
#define EDGEFIT_BENCH_ORT_SLOTS_H

#include <stddef.h>
#include <stdint.h>

/* Opaque objects of the library; only pointers to them are handled. */
typedef struct ort_status ort_status;
typedef struct ort_env ort_env;
typedef struct ort_session_options ort_session_options;
typedef struct ort_session ort_session;
typedef struct ort_memory_info ort_memory_info;
typedef struct ort_value ort_value;
typedef struct ort_type_info ort_type_info;
typedef struct ort_tensor_info ort_tensor_info;
typedef struct ort_allocator ort_allocator;
typedef struct ort_run_options ort_run_options;

/* The API base: the first two members of what OrtGetApiBase returns. */
struct ort_api_base {
    const void *(*get_api)(uint32_t version);
    const char *(*get_version_string)(void);
};
typedef const struct ort_api_base *(*ort_get_api_base_fn)(void);

/* The API version requested: every slot below is in version 8's table,
 * whose header they were counted from (all but AddSessionConfigEntry are
 * version 1's). */
#define ORT_BENCH_API_VERSION 8u

/* Values of the C API's enums that are passed here. */
enum {
    ORT_BENCH_LOG_WARNING = 2,      /* OrtLoggingLevel: warnings and up */
    ORT_BENCH_ERROR_FAIL = 1,       /* OrtErrorCode ORT_FAIL */
    ORT_BENCH_SEQUENTIAL = 0,       /* ExecutionMode */
    ORT_BENCH_OPT_ALL = 99,         /* GraphOptimizationLevel: every
                                       optimisation, as the Node bench */
    ORT_BENCH_DEVICE_ALLOCATOR = 0, /* OrtAllocatorType */
    ORT_BENCH_MEM_DEFAULT = 0,      /* OrtMemType */
    ORT_BENCH_FLOAT = 1,            /* ONNXTensorElementDataType: float32 */
};

/* Positions in struct OrtApi. */
enum ort_slot {
    ORT_CREATE_STATUS = 0,
    ORT_GET_ERROR_MESSAGE = 2,
    ORT_CREATE_ENV = 3,
    ORT_CREATE_SESSION = 7,
    ORT_RUN = 9,
    ORT_CREATE_SESSION_OPTIONS = 10,
    ORT_SET_SESSION_EXECUTION_MODE = 13,
    ORT_ENABLE_PROFILING = 14,
    ORT_SET_GRAPH_OPTIMIZATION_LEVEL = 23,
    ORT_SET_INTRA_OP_NUM_THREADS = 24,
    ORT_SET_INTER_OP_NUM_THREADS = 25,
    ORT_SESSION_GET_INPUT_COUNT = 30,
    ORT_SESSION_GET_OUTPUT_COUNT = 31,
    ORT_SESSION_GET_INPUT_TYPE_INFO = 33,
    ORT_SESSION_GET_INPUT_NAME = 36,
    ORT_SESSION_GET_OUTPUT_NAME = 37,
    ORT_CREATE_TENSOR_WITH_DATA = 49,
    ORT_GET_TENSOR_MUTABLE_DATA = 51,
    ORT_CAST_TYPE_INFO_TO_TENSOR_INFO = 55,
    ORT_GET_TENSOR_ELEMENT_TYPE = 60,
    ORT_GET_DIMENSIONS_COUNT = 61,
    ORT_GET_DIMENSIONS = 62,
    ORT_GET_TENSOR_TYPE_AND_SHAPE = 65,
    ORT_CREATE_CPU_MEMORY_INFO = 69,
    ORT_ALLOCATOR_FREE = 76,
    ORT_GET_DEFAULT_ALLOCATOR = 78,
    ORT_RELEASE_ENV = 92,
    ORT_RELEASE_STATUS = 93,
    ORT_RELEASE_MEMORY_INFO = 94,
    ORT_RELEASE_SESSION = 95,
    ORT_RELEASE_VALUE = 96,
    ORT_RELEASE_TYPE_INFO = 98,
    ORT_RELEASE_TENSOR_INFO = 99,
    ORT_RELEASE_SESSION_OPTIONS = 100,
    ORT_ADD_SESSION_CONFIG_ENTRY = 130,
};

/* The signatures of those slots, in slot order. */
typedef ort_status *(*ort_create_status_fn)(int code, const char *msg);
typedef const char *(*ort_get_error_message_fn)(const ort_status *st);
typedef ort_status *(*ort_create_env_fn)(int log_level, const char *log_id,
                                         ort_env **out);
typedef ort_status *(*ort_create_session_fn)(const ort_env *env,
                                             const char *model_path,
                                             const ort_session_options *o,
                                             ort_session **out);
typedef ort_status *(*ort_run_fn)(ort_session *s, const ort_run_options *ro,
                                  const char *const *input_names,
                                  const ort_value *const *inputs,
                                  size_t input_count,
                                  const char *const *output_names,
                                  size_t output_count, ort_value **outputs);
typedef ort_status *(*ort_create_session_options_fn)(
    ort_session_options **out);
typedef ort_status *(*ort_options_int_fn)(ort_session_options *o, int value);
typedef ort_status *(*ort_options_str_fn)(ort_session_options *o,
                                          const char *value);
typedef ort_status *(*ort_session_count_fn)(const ort_session *s,
                                            size_t *out);
typedef ort_status *(*ort_session_type_info_fn)(const ort_session *s,
                                                size_t index,
                                                ort_type_info **out);
typedef ort_status *(*ort_session_name_fn)(const ort_session *s,
                                           size_t index, ort_allocator *a,
                                           char **out);
typedef ort_status *(*ort_create_tensor_with_data_fn)(
    const ort_memory_info *info, void *data, size_t data_bytes,
    const int64_t *shape, size_t rank, int element_type, ort_value **out);
typedef ort_status *(*ort_get_tensor_mutable_data_fn)(ort_value *v,
                                                      void **out);
typedef ort_status *(*ort_cast_type_info_fn)(const ort_type_info *ti,
                                             const ort_tensor_info **out);
typedef ort_status *(*ort_get_element_type_fn)(const ort_tensor_info *ti,
                                               int *out);
typedef ort_status *(*ort_get_dimensions_count_fn)(const ort_tensor_info *ti,
                                                   size_t *out);
typedef ort_status *(*ort_get_dimensions_fn)(const ort_tensor_info *ti,
                                             int64_t *dims, size_t rank);
typedef ort_status *(*ort_get_tensor_type_and_shape_fn)(
    const ort_value *v, ort_tensor_info **out);
typedef ort_status *(*ort_create_cpu_memory_info_fn)(int allocator_type,
                                                     int mem_type,
                                                     ort_memory_info **out);
typedef ort_status *(*ort_allocator_free_fn)(ort_allocator *a, void *p);
typedef ort_status *(*ort_get_default_allocator_fn)(ort_allocator **out);
typedef void (*ort_release_fn)(void *object);
typedef ort_status *(*ort_options_entry_fn)(ort_session_options *o,
                                            const char *key,
                                            const char *value);

#endif
