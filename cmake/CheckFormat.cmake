# SPDX-License-Identifier: MIT
#
# cmake -DSOURCE_DIR=<tree> [-DCLANG_FORMAT=<path>] -P CheckFormat.cmake
#
# Fails unless every C file of the library, its tests, examples and
# benchmarks is formatted as .clang-format says. Prints "clang-format not
# found" (which the CTest test treats as a skip) where the tool is missing.

cmake_minimum_required(VERSION 3.25)

if(NOT CLANG_FORMAT)
	find_program(CLANG_FORMAT NAMES clang-format clang-format-14 clang-format-15 clang-format-16)
endif()
if(NOT CLANG_FORMAT)
	message("clang-format not found")
	return()
endif()

# The set of files to check is whatever C is in these folders when the test
# runs (not a build input, so a glob is the right tool here).
file(GLOB_RECURSE files
	"${SOURCE_DIR}/include/*.h"
	"${SOURCE_DIR}/src/*.[ch]"
	"${SOURCE_DIR}/tests/*.[ch]"
	"${SOURCE_DIR}/examples/*.[ch]"
	"${SOURCE_DIR}/bench/*.[ch]")
set(bad "")
foreach(f IN LISTS files)
	execute_process(COMMAND "${CLANG_FORMAT}" --dry-run --Werror "${f}"
		RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
	if(NOT rc EQUAL 0)
		list(APPEND bad "${f}")
	endif()
endforeach()
if(bad)
	string(REPLACE ";" "\n  " bad "${bad}")
	message(FATAL_ERROR "not formatted as .clang-format says (run clang-format -i):\n  ${bad}")
endif()
list(LENGTH files n)
message(STATUS "${n} files formatted as .clang-format says")
