# SPDX-License-Identifier: MIT
#
# UMCG_SANITIZE_ADDRESS (ASan + UBSan) and UMCG_SANITIZE_THREAD (TSan).
#
# The flags go on every target of the project, library and programs alike,
# so that the runtime sees every access. Sets:
#   UMCG_SANITIZERS               "address,undefined", "thread" or "none"
#   UMCG_SANITIZER_FLAGS          the flags, also needed by whatever links
#                                 against this build (tests/install/run.sh)
#   UMCG_NO_UNDEFINED_LINK_OPTION -z defs for libumcg.so, where it can work

if(UMCG_SANITIZE_ADDRESS AND UMCG_SANITIZE_THREAD)
	message(FATAL_ERROR
		"UMCG_SANITIZE_ADDRESS and UMCG_SANITIZE_THREAD cannot be combined: "
		"ASan and TSan are separate runtimes. Use one build directory for each "
		"(the presets asan and tsan).")
endif()

if(UMCG_SANITIZE_ADDRESS)
	set(UMCG_SANITIZERS "address,undefined")
	set(_umcg_sanitizer_check UMCG_C_LINKS_ASAN_UBSAN)
	set(UMCG_SANITIZER_FLAGS
		-fsanitize=address,undefined
		-fno-sanitize-recover=all
		-fno-omit-frame-pointer)
elseif(UMCG_SANITIZE_THREAD)
	set(UMCG_SANITIZERS "thread")
	set(_umcg_sanitizer_check UMCG_C_LINKS_TSAN)
	set(UMCG_SANITIZER_FLAGS
		-fsanitize=thread
		-fno-omit-frame-pointer)
else()
	set(UMCG_SANITIZERS "none")
	set(UMCG_SANITIZER_FLAGS "")
endif()

if(UMCG_SANITIZER_FLAGS)
	include(CheckCSourceCompiles)
	set(CMAKE_REQUIRED_FLAGS "${UMCG_SANITIZER_FLAGS}")
	list(JOIN CMAKE_REQUIRED_FLAGS " " CMAKE_REQUIRED_FLAGS)
	set(CMAKE_REQUIRED_LINK_OPTIONS ${UMCG_SANITIZER_FLAGS})
	check_c_source_compiles("int main(void) { return 0; }" ${_umcg_sanitizer_check})
	unset(CMAKE_REQUIRED_FLAGS)
	unset(CMAKE_REQUIRED_LINK_OPTIONS)
	if(NOT ${_umcg_sanitizer_check})
		message(FATAL_ERROR
			"${CMAKE_C_COMPILER} cannot build and link with ${UMCG_SANITIZER_FLAGS}. "
			"With GCC on Debian or Ubuntu the runtimes come with the compiler "
			"(packages libasan8, libubsan1, libtsan2 for gcc 12).")
	endif()
	add_compile_options(${UMCG_SANITIZER_FLAGS})
	add_link_options(${UMCG_SANITIZER_FLAGS})
endif()

# -z defs rejects a libumcg.so with undefined symbols. Clang does not link
# the sanitizer runtimes into shared objects (the executable provides them),
# so there the check would reject every sanitized build.
if(UMCG_SANITIZER_FLAGS AND CMAKE_C_COMPILER_ID MATCHES "Clang")
	set(UMCG_NO_UNDEFINED_LINK_OPTION "")
else()
	set(UMCG_NO_UNDEFINED_LINK_OPTION "LINKER:-z,defs")
endif()
