# SPDX-License-Identifier: MIT
#
# cmake -DPROGRAM=<program> [-DARGS="<arg> ..."] -P CheckJsonOutput.cmake
#
# Runs PROGRAM with ARGS (split like a shell command line) and fails unless it exits with 0 and its standard output is
# JSON: one object or array, or one object or array per non-empty line
# (JSON Lines). Standard error is passed through. Nothing about the values is
# checked; a test built on this proves that a program runs and reports.

cmake_minimum_required(VERSION 3.25)

if(NOT PROGRAM)
	message(FATAL_ERROR "CheckJsonOutput.cmake: pass -DPROGRAM=<program>")
endif()
separate_arguments(args UNIX_COMMAND "${ARGS}")
set(command "${PROGRAM}" ${args})

execute_process(COMMAND ${command}
	OUTPUT_VARIABLE out
	RESULT_VARIABLE rc)
message("${out}")
if(NOT rc STREQUAL "0")
	message(FATAL_ERROR "${PROGRAM} exited with ${rc}")
endif()

string(STRIP "${out}" out)
if(out STREQUAL "")
	message(FATAL_ERROR "${PROGRAM} printed nothing on standard output")
endif()

# json_document(<text> <error variable>): sets the error variable unless
# <text> is exactly one JSON object or array. CMake's parser stops after
# the first value and ignores what follows it, so the text is parsed as the
# only element of an array: anything after the first value is then an error
# or a second element.
function(json_document text err_var)
	string(JSON n ERROR_VARIABLE err LENGTH "[${text}]")
	if(NOT err AND NOT n EQUAL 1)
		set(err "${n} values")
	endif()
	if(NOT err)
		string(JSON type TYPE "[${text}]" 0)
		if(NOT type MATCHES "^(OBJECT|ARRAY)$")
			set(err "a bare ${type}")
		endif()
	endif()
	set(${err_var} "${err}" PARENT_SCOPE)
endfunction()

json_document("${out}" err)
if(NOT err)
	message(STATUS "standard output: one JSON document")
	return()
endif()

# Not one document: accept JSON Lines, every non-empty line a document.
string(REPLACE ";" "\\;" escaped "${out}")
string(REPLACE "\n" ";" lines "${escaped}")
set(n 0)
foreach(line IN LISTS lines)
	string(STRIP "${line}" line)
	if(line STREQUAL "")
		continue()
	endif()
	json_document("${line}" line_err)
	if(line_err)
		message(FATAL_ERROR
			"standard output is neither one JSON document (${err}) "
			"nor JSON Lines: line '${line}': ${line_err}")
	endif()
	math(EXPR n "${n} + 1")
endforeach()
message(STATUS "standard output: ${n} JSON lines")
