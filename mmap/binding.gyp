{
  "targets": [
    {
      "target_name": "sift_mmap",
      "sources": ["src/mmap.c"],
      "defines": ["NAPI_VERSION=8"],
      "cflags": ["-O2", "-Wall"]
    }
  ]
}
