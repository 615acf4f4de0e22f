# SPDX-License-Identifier: MIT
#
# libumcg.pc and libumcg-preload.pc: generated from their .pc.in at
# configure time for the configured prefix, and rewritten at install time
# for the prefix actually installed to, so that `cmake --install <dir>
# --prefix <p>` yields a file that points into <p>.

# umcg_install_pkgconfig(<template> <destination> <component>)
function(umcg_install_pkgconfig template destination component)
	foreach(dir IN ITEMS LIBDIR INCLUDEDIR)
		if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
			set(UMCG_PC_${dir} "${CMAKE_INSTALL_${dir}}")
		else()
			set(UMCG_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
		endif()
	endforeach()
	set(UMCG_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
	get_filename_component(name "${template}" NAME)
	string(REGEX REPLACE "\\.in$" "" name "${name}")
	set(configured "${PROJECT_BINARY_DIR}/${name}")
	set(installed "${PROJECT_BINARY_DIR}/pkgconfig-install/${name}")
	configure_file("${template}" "${configured}" @ONLY)

	install(CODE "
		set(UMCG_PC_CONFIGURED \"${configured}\")
		set(UMCG_PC_INSTALLED \"${installed}\")
		include(\"${PROJECT_SOURCE_DIR}/cmake/UmcgPkgConfigInstall.cmake\")"
		COMPONENT ${component})
	install(FILES "${installed}" DESTINATION "${destination}" COMPONENT ${component})
endfunction()
