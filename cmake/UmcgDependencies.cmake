# SPDX-License-Identifier: MIT
#
# External dependencies found through pkg-config. A missing one stops the
# configuration with the name of the Debian package that provides it.
#
# Imported targets:
#   PkgConfig::UMCG_CHECK  Check, when UMCG_BUILD_TESTS
#   PkgConfig::UMCG_URING  liburing, when UMCG_WITH_URING (the I/O layer
#                          will link it; the library does not yet)

if(NOT (UMCG_BUILD_TESTS OR UMCG_WITH_URING))
	return()
endif()

find_package(PkgConfig QUIET)
if(NOT PKG_CONFIG_FOUND)
	message(FATAL_ERROR
		"pkg-config was not found (it locates Check and liburing). "
		"On Debian or Ubuntu: apt-get install pkg-config")
endif()

if(UMCG_WITH_URING)
	pkg_check_modules(UMCG_URING IMPORTED_TARGET liburing)
	if(NOT UMCG_URING_FOUND)
		message(FATAL_ERROR
			"liburing was not found (pkg-config module 'liburing'). "
			"On Debian or Ubuntu: apt-get install liburing-dev")
	endif()
endif()

if(UMCG_BUILD_TESTS)
	# Debian's check.pc requires libsubunit, which libsubunit-dev provides.
	pkg_check_modules(UMCG_CHECK IMPORTED_TARGET check)
	if(NOT UMCG_CHECK_FOUND)
		message(FATAL_ERROR
			"Check, the unit-test framework of the test suites, was not found "
			"(pkg-config modules 'check' and 'libsubunit'). "
			"On Debian or Ubuntu: apt-get install check libsubunit-dev "
			"-- or configure with -DUMCG_BUILD_TESTS=OFF")
	endif()
endif()
