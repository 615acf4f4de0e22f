# SPDX-License-Identifier: MIT
#
# cmake -DLIBRARY=<libumcg.so> -DMAP=<libumcg.map> -DHEADERS=<h>[|<h>...]
#       -DPRIVATE_HEADER=<src/preload.h> -DNM=<nm> -P CheckExports.cmake
#
# The exported interface is written down three times: the UMCG_API
# declarations of the public headers, the global: list of the version
# script's first node, and the dynamic symbol table of the built library.
# This fails unless the three name the same functions and every exported
# symbol carries the version node of the script. The private node (the
# names libumcg-preload.so uses) is held to the same rule against the
# UMCG_PRIVATE declarations of PRIVATE_HEADER, and its names must start
# with umcg__.

cmake_minimum_required(VERSION 3.25)

foreach(var IN ITEMS LIBRARY MAP HEADERS PRIVATE_HEADER NM)
	if(NOT ${var})
		message(FATAL_ERROR "CheckExports.cmake: pass -D${var}=...")
	endif()
endforeach()

# The version script: one node, its global: names up to local:.
file(READ "${MAP}" map)
if(NOT map MATCHES "([A-Za-z_][A-Za-z0-9_.]*)[ \t\n]*{[ \t\n]*global:([^}]*)local:")
	message(FATAL_ERROR "${MAP}: expected 'NODE { global: ... local: ... };'")
endif()
set(node "${CMAKE_MATCH_1}")
string(REGEX MATCHALL "[A-Za-z_][A-Za-z0-9_]*" map_names "${CMAKE_MATCH_2}")
list(SORT map_names)

# The private node: LIBUMCG_PRIVATE_<v> { global: ... } <parent>;
set(private_node "")
set(private_map_names "")
if(map MATCHES "(LIBUMCG_PRIVATE_[0-9.]+)[ \t\n]*{[ \t\n]*global:([^}]*)}")
	set(private_node "${CMAKE_MATCH_1}")
	string(REGEX MATCHALL "[A-Za-z_][A-Za-z0-9_]*" private_map_names "${CMAKE_MATCH_2}")
	list(SORT private_map_names)
endif()
file(READ "${PRIVATE_HEADER}" header)
string(REGEX MATCHALL "UMCG_PRIVATE [^;(]*[ *]umcg__[a-z0-9_]+\\(" decls "${header}")
set(private_header_names "")
foreach(decl IN LISTS decls)
	string(REGEX MATCH "umcg__[a-z0-9_]+\\($" name "${decl}")
	string(REPLACE "(" "" name "${name}")
	list(APPEND private_header_names "${name}")
endforeach()
# Objects: extern __thread <type> umcg__name ... UMCG_PRIVATE (the match
# stops before the ";", which would split the list)
string(REGEX MATCHALL "extern [^;(]*[ *]umcg__[a-z0-9_]+ [^;]*UMCG_PRIVATE" decls "${header}")
foreach(decl IN LISTS decls)
	string(REGEX MATCH "umcg__[a-z0-9_]+" name "${decl}")
	list(APPEND private_header_names "${name}")
endforeach()
list(SORT private_header_names)

# The headers: every function and object declared with UMCG_API.
string(REPLACE "|" ";" headers "${HEADERS}")
set(header_names "")
foreach(file IN LISTS headers)
	file(READ "${file}" header)
	string(REGEX MATCHALL "\nUMCG_API [^;(]*[ *]umcg_[a-z0-9_]+\\(" decls "${header}")
	foreach(decl IN LISTS decls)
		string(REGEX MATCH "umcg_[a-z0-9_]+\\($" name "${decl}")
		string(REPLACE "(" "" name "${name}")
		list(APPEND header_names "${name}")
	endforeach()
	# Exported objects: UMCG_API extern const <type> umcg_name;
	# (the match stops before the ';', which would split the list)
	string(REGEX MATCHALL "\nUMCG_API extern const [^;(]*[ *]umcg_[a-z0-9_]+" decls "${header}")
	foreach(decl IN LISTS decls)
		string(REGEX MATCH "umcg_[a-z0-9_]+$" name "${decl}")
		list(APPEND header_names "${name}")
	endforeach()
endforeach()
list(SORT header_names)

# The library: defined dynamic symbols, name@@NODE.
execute_process(COMMAND "${NM}" -D --defined-only "${LIBRARY}"
	OUTPUT_VARIABLE nm_out
	RESULT_VARIABLE rc)
if(NOT rc STREQUAL "0")
	message(FATAL_ERROR "${NM} -D --defined-only ${LIBRARY} failed (${rc})")
endif()
string(REGEX MATCHALL "[^\n]+" nm_lines "${nm_out}")
set(lib_names "")
set(private_lib_names "")
set(unversioned "")
foreach(line IN LISTS nm_lines)
	if(NOT line MATCHES "^[0-9a-fA-F]* *([A-Za-z]) ([^ @]+)(@@?([^ ]+))?$")
		message(FATAL_ERROR "unexpected nm output: '${line}'")
	endif()
	set(type "${CMAKE_MATCH_1}")
	set(name "${CMAKE_MATCH_2}")
	set(version "${CMAKE_MATCH_4}")
	if(type STREQUAL "A" AND (name STREQUAL node OR name STREQUAL private_node))
		continue()
	endif()
	if(private_node AND version STREQUAL private_node)
		list(APPEND private_lib_names "${name}")
		continue()
	endif()
	list(APPEND lib_names "${name}")
	if(NOT version STREQUAL node)
		list(APPEND unversioned "${name}@${version}")
	endif()
endforeach()
list(SORT lib_names)
list(SORT private_lib_names)

message(STATUS "header UMCG_API: ${header_names}")
message(STATUS "${node}: ${map_names}")
message(STATUS "exported: ${lib_names}")
message(STATUS "${private_node}: ${private_map_names}")

# compare(<what> <list a> <name a> <list b> <name b>): report the
# differences between two sorted lists of names.
function(compare what a a_name b b_name)
	if("${${a}}" STREQUAL "${${b}}")
		return()
	endif()
	set(only_a ${${a}})
	set(only_b ${${b}})
	if(${b})
		list(REMOVE_ITEM only_a ${${b}})
	endif()
	if(${a})
		list(REMOVE_ITEM only_b ${${a}})
	endif()
	message(SEND_ERROR "${what}: only in ${a_name}: [${only_a}]; only in ${b_name}: [${only_b}]")
	set(failed TRUE PARENT_SCOPE)
endfunction()

set(failed FALSE)
if(NOT header_names)
	message(SEND_ERROR "${HEADERS}: no UMCG_API declarations found")
	set(failed TRUE)
endif()
compare("declared and listed differ" header_names "the headers" map_names "${MAP}")
compare("listed and exported differ" map_names "${MAP}" lib_names "${LIBRARY}")
compare("private: declared and listed differ" private_header_names "${PRIVATE_HEADER}"
	private_map_names "${private_node}")
compare("private: listed and exported differ" private_map_names "${private_node}"
	private_lib_names "${LIBRARY}")
foreach(name IN LISTS private_map_names)
	if(NOT name MATCHES "^umcg__")
		message(SEND_ERROR "${private_node}: ${name} does not start with umcg__")
		set(failed TRUE)
	endif()
endforeach()
if(unversioned)
	message(SEND_ERROR "exported without version ${node}: ${unversioned}")
	set(failed TRUE)
endif()
if(failed)
	message(FATAL_ERROR "exports check failed")
endif()
