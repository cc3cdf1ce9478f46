# data.source parquet: Apache Arrow's C++ Parquet reader, taken from the pyarrow wheel beside torch.
# Debian 12 packages no Arrow; the wheel (installed by scripts/setup-torch.sh) carries
# libarrow.so.<N>, libparquet.so.<N> and their headers in site-packages/pyarrow/. Included by
# engine/CMakeLists.txt once trainbench_engine exists: it adds data/parquet_records.cpp and links the
# two libraries (and the hf_dataset reader beside it), or, without them, data/arrow_unavailable.cpp,
# which refuses both sources with a fix.
#
# ABI, measured on pyarrow 26.0.1 (manylinux_2_28): every exported symbol taking a std::string uses
# std::__cxx11::basic_string (698 of them in libarrow, none with the old string), the ABI of g++ 12
# and of torch 2.11 (_GLIBCXX_USE_CXX11_ABI=1); the libraries need GLIBCXX_3.4.22 at most (Debian's
# libstdc++ has 3.4.30). The check below links a call through std::string with torch's flags, so a
# wheel built the other way is found here rather than at link time of every program.
set(TRAINBENCH_PARQUET AUTO CACHE STRING "data.source parquet: AUTO (when pyarrow is found), ON (required) or OFF")
set_property(CACHE TRAINBENCH_PARQUET PROPERTY STRINGS AUTO ON OFF)
get_filename_component(_arrow_default_root "${Torch_DIR}/../../../../pyarrow" ABSOLUTE)
set(TRAINBENCH_ARROW_ROOT "${_arrow_default_root}" CACHE PATH
    "Folder holding include/arrow, libarrow.so.<N> and libparquet.so.<N> (default: the pyarrow beside torch)")

set(_parquet_found FALSE)
if(NOT TRAINBENCH_PARQUET STREQUAL "OFF")
  # The wheel's libraries have only their versioned names (no libarrow.so link to hand to -l):
  # link them by full path; their folder goes into the build and install RPATH.
  file(GLOB _arrow_libs "${TRAINBENCH_ARROW_ROOT}/libarrow.so.[0-9]*")
  file(GLOB _parquet_libs "${TRAINBENCH_ARROW_ROOT}/libparquet.so.[0-9]*")
  list(SORT _arrow_libs COMPARE NATURAL ORDER DESCENDING)
  list(SORT _parquet_libs COMPARE NATURAL ORDER DESCENDING)
  if(_arrow_libs AND _parquet_libs AND EXISTS "${TRAINBENCH_ARROW_ROOT}/include/parquet/arrow/reader.h")
    list(GET _arrow_libs 0 TRAINBENCH_ARROW_LIBRARY)
    list(GET _parquet_libs 0 TRAINBENCH_PARQUET_LIBRARY)
    include(CheckCXXSourceCompiles)
    set(CMAKE_REQUIRED_INCLUDES "${TRAINBENCH_ARROW_ROOT}/include")
    set(CMAKE_REQUIRED_FLAGS "${TORCH_CXX_FLAGS}")
    set(CMAKE_REQUIRED_LIBRARIES "${TRAINBENCH_PARQUET_LIBRARY};${TRAINBENCH_ARROW_LIBRARY}")
    set(CMAKE_REQUIRED_LINK_OPTIONS "-Wl,-rpath,${TRAINBENCH_ARROW_ROOT}")
    set(CMAKE_REQUIRED_QUIET ON)
    check_cxx_source_compiles([[
      #include <parquet/arrow/reader.h>
      #include <arrow/io/file.h>
      int main() {
        std::string path = "x";  // a std::string crossing into the library: the ABI in question
        auto file = arrow::io::ReadableFile::Open(path);
        return file.ok() && parquet::arrow::OpenFile(*file, arrow::default_memory_pool()).ok() ? 0 : 1;
      }]] TRAINBENCH_ARROW_LINKS)
    unset(CMAKE_REQUIRED_INCLUDES)
    unset(CMAKE_REQUIRED_FLAGS)
    unset(CMAKE_REQUIRED_LIBRARIES)
    unset(CMAKE_REQUIRED_LINK_OPTIONS)
    unset(CMAKE_REQUIRED_QUIET)
    set(_parquet_found ${TRAINBENCH_ARROW_LINKS})
  endif()
endif()

if(_parquet_found)
  target_sources(trainbench_engine PRIVATE data/parquet_records.cpp data/hf_dataset_records.cpp data/arrow_strings.cpp)
  # Arrow's headers reach these files only (none of ours outside them includes them), so the rest
  # of the engine compiles as before; nor do they need torch's precompiled header.
  set_source_files_properties(data/parquet_records.cpp data/hf_dataset_records.cpp data/arrow_strings.cpp
    PROPERTIES SKIP_PRECOMPILE_HEADERS ON COMPILE_OPTIONS "-isystem;${TRAINBENCH_ARROW_ROOT}/include")
  target_link_libraries(trainbench_engine PRIVATE ${TRAINBENCH_PARQUET_LIBRARY} ${TRAINBENCH_ARROW_LIBRARY})
  message(STATUS "data.source parquet: built in (${TRAINBENCH_PARQUET_LIBRARY})")
elseif(TRAINBENCH_PARQUET STREQUAL "ON")
  message(FATAL_ERROR "TRAINBENCH_PARQUET=ON, but no Arrow C++ build that links with this compiler's C++11 "
                      "string ABI is in ${TRAINBENCH_ARROW_ROOT}: run scripts/setup-torch.sh (it installs pyarrow "
                      "into the torch environment), or set TRAINBENCH_ARROW_ROOT")
else()
  target_sources(trainbench_engine PRIVATE data/arrow_unavailable.cpp)
  message(STATUS "data.source parquet: not built in (no pyarrow with libarrow and libparquet in "
                 "${TRAINBENCH_ARROW_ROOT}; scripts/setup-torch.sh installs it)")
endif()
# The tests of the reader (tests/CMakeLists.txt) exist where it does.
set(TRAINBENCH_HAVE_PARQUET ${_parquet_found} CACHE INTERNAL "data.source parquet is built in")
