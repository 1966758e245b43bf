// Maps a file read-only into an ArrayBuffer. The mapping lives as long as the ArrayBuffer: it is
// unmapped by the finalizer when the garbage collector frees the buffer, never explicitly, so a
// typed array still referenced by a search can never point at unmapped memory.
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <node_api.h>

static void unmap(napi_env env, void* data, void* hint) {
  (void)env;
  munmap(data, (size_t)(uintptr_t)hint);
}

static napi_value fail(napi_env env, const char* what) {
  char message[256];
  snprintf(message, sizeof message, "%s: %s", what, strerror(errno));
  napi_throw_error(env, "ERR_SIFT_MMAP", message);
  return NULL;
}

/* map(fd, length): ArrayBuffer over bytes [0, length) of the file, shared and read-only. */
static napi_value map_file(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t fd = -1;
  int64_t length = -1;
  napi_value result;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 2 ||
      napi_get_value_int32(env, argv[0], &fd) != napi_ok || napi_get_value_int64(env, argv[1], &length) != napi_ok ||
      fd < 0 || length < 0) {
    napi_throw_type_error(env, "ERR_INVALID_ARG", "map(fd, length) takes a file descriptor and a length");
    return NULL;
  }
  if (length == 0) {
    void* unused;
    napi_create_arraybuffer(env, 0, &unused, &result);
    return result;
  }
  void* address = mmap(NULL, (size_t)length, PROT_READ, MAP_SHARED, fd, 0);
  if (address == MAP_FAILED) return fail(env, "mmap");
  if (napi_create_external_arraybuffer(env, address, (size_t)length, unmap, (void*)(uintptr_t)length, &result) != napi_ok) {
    munmap(address, (size_t)length);
    napi_throw_error(env, "ERR_SIFT_MMAP", "this runtime does not allow external array buffers");
    return NULL;
  }
  return result;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_value fn;
  napi_create_function(env, "map", NAPI_AUTO_LENGTH, map_file, NULL, &fn);
  napi_set_named_property(env, exports, "map", fn);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
