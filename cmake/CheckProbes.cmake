# SPDX-License-Identifier: MIT
#
# cmake -DLIBRARY=<libumcg.so> -DTRACE_H=<src/trace.h> -DSOURCE_DIR=<src>
#       -DREADELF=<readelf> -P CheckProbes.cmake
#
# The USDT probes are written down in the comment of src/trace.h and used
# through UMCG_TRACEn(name, ...) in src/. This fails unless every probe the
# comment lists is in the library's .note.stapsdt notes under provider
# "libumcg", every probe used in src/ is in that list, and the notes hold
# no probe the list lacks.

cmake_minimum_required(VERSION 3.25)

foreach(var IN ITEMS LIBRARY TRACE_H SOURCE_DIR READELF)
	if(NOT ${var})
		message(FATAL_ERROR "CheckProbes.cmake: pass -D${var}=...")
	endif()
endforeach()

# The documented list: comment lines " *   name(args)  text".
file(STRINGS "${TRACE_H}" lines REGEX "^ \\*   [a-z_]+\\(")
set(documented "")
foreach(line IN LISTS lines)
	string(REGEX REPLACE "^ \\*   ([a-z_]+)\\(.*" "\\1" name "${line}")
	list(APPEND documented "${name}")
endforeach()
list(SORT documented)
if(NOT documented)
	message(FATAL_ERROR "${TRACE_H}: no probe list found in its comment")
endif()

# The probes used in the sources.
file(GLOB sources "${SOURCE_DIR}/*.c")
set(used "")
foreach(src IN LISTS sources)
	file(STRINGS "${src}" calls REGEX "UMCG_TRACE[0-9]\\(")
	foreach(call IN LISTS calls)
		string(REGEX MATCHALL "UMCG_TRACE[0-9]\\([a-z_]+" found "${call}")
		foreach(f IN LISTS found)
			string(REGEX REPLACE "UMCG_TRACE[0-9]\\(" "" name "${f}")
			list(APPEND used "${name}")
		endforeach()
	endforeach()
endforeach()
list(REMOVE_DUPLICATES used)
list(SORT used)

# The notes of the built library.
execute_process(COMMAND "${READELF}" -n --wide "${LIBRARY}"
	OUTPUT_VARIABLE notes RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
	message(FATAL_ERROR "${READELF} -n ${LIBRARY} failed (${rc})")
endif()
string(REGEX MATCHALL "Provider: [a-z_]+\n[ \t]*Name: [a-z_]+" pairs "${notes}")
set(in_notes "")
foreach(p IN LISTS pairs)
	if(NOT p MATCHES "Provider: ([a-z_]+)\n[ \t]*Name: ([a-z_]+)")
		continue()
	endif()
	if(NOT CMAKE_MATCH_1 STREQUAL "libumcg")
		message(FATAL_ERROR "probe ${CMAKE_MATCH_2} has provider ${CMAKE_MATCH_1}, not libumcg")
	endif()
	list(APPEND in_notes "${CMAKE_MATCH_2}")
endforeach()
list(REMOVE_DUPLICATES in_notes)
list(SORT in_notes)

set(bad "")
foreach(name IN LISTS documented)
	if(NOT name IN_LIST in_notes)
		string(APPEND bad "  ${name}: documented in trace.h, missing from the notes\n")
	endif()
endforeach()
foreach(name IN LISTS used)
	if(NOT name IN_LIST documented)
		string(APPEND bad "  ${name}: used in src/, not documented in trace.h\n")
	endif()
endforeach()
foreach(name IN LISTS in_notes)
	if(NOT name IN_LIST documented)
		string(APPEND bad "  ${name}: in the notes, not documented in trace.h\n")
	endif()
endforeach()
if(bad)
	message(FATAL_ERROR "USDT probes disagree:\n${bad}")
endif()
list(LENGTH in_notes n)
list(LENGTH pairs sites)
message(STATUS "${n} probes in ${sites} places, all documented: ${in_notes}")
