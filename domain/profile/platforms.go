package profile

// The distributions Generate draws from. Weights are rough shares of the
// devices in use on each platform (displays and their scaling, processor
// counts, GPUs, system versions), enough that a drawn device is a common
// one and that two draws seldom agree; names and limits are those the
// browsers of those devices report.

// pcCores are navigator.hardwareConcurrency of Windows and Linux PCs.
var pcCores = []weighted[int]{{2, 2}, {4, 14}, {6, 12}, {8, 26}, {12, 16}, {16, 18}, {20, 5}, {24, 4}, {32, 3}}

// windowsVersions are Sec-CH-UA-Platform-Version on Windows: "10.0.0" is
// Windows 10 (2004 to 22H2), "15.0.0" Windows 11 22H2 and 23H2, "19.0.0"
// Windows 11 24H2 and later.
var windowsVersions = []weighted[string]{{"10.0.0", 40}, {"15.0.0", 25}, {"19.0.0", 35}}

// windowsScreens are CSS sizes: a 1920x1080 panel at 125 % scaling is
// 1536x864 at a ratio of 1.25.
var windowsScreens = []weighted[screenSize]{
	{screenSize{1920, 1080, 1}, 30}, {screenSize{1536, 864, 1.25}, 14}, {screenSize{1366, 768, 1}, 10},
	{screenSize{2560, 1440, 1}, 9}, {screenSize{1280, 720, 1.5}, 5}, {screenSize{1440, 900, 1}, 5},
	{screenSize{1600, 900, 1}, 5}, {screenSize{1920, 1200, 1}, 4}, {screenSize{2048, 1152, 1.25}, 3},
	{screenSize{1707, 1067, 1.5}, 3}, {screenSize{1920, 1080, 2}, 3}, {screenSize{2560, 1440, 1.5}, 3},
	{screenSize{1280, 800, 1.5}, 2}, {screenSize{2560, 1080, 1}, 2}, {screenSize{3440, 1440, 1}, 2},
	{screenSize{1680, 1050, 1}, 2}, {screenSize{1280, 1024, 1}, 1},
}

// d3d11Limits are what ANGLE's Direct3D 11 back end reports on Windows,
// the same for every GPU of feature level 11.
var d3d11Limits = &WebGL{
	MaxTextureSize: 16384, MaxRenderbufferSize: 16384, MaxViewportDims: [2]int{32767, 32767},
	MaxVertexAttribs: 16, MaxVertexUniformVectors: 4096, MaxFragmentUniformVectors: 1024, MaxVaryingVectors: 30,
	MaxCombinedTextureImageUnits: 32, MaxTextureImageUnits: 16, MaxVertexTextureImageUnits: 16,
	MaxCubeMapTextureSize: 16384, AliasedLineWidthRange: [2]float64{1, 1}, AliasedPointSizeRange: [2]float64{1, 1024},
}

// d3d11 is a GPU as Chrome on Windows names it, with its PCI device id.
func d3d11(vendor, name, deviceID string, discrete bool) gpu {
	return gpu{vendor: "Google Inc. (" + vendor + ")",
		renderer: "ANGLE (" + vendor + ", " + name + " (0x0000" + deviceID + ") Direct3D11 vs_5_0 ps_5_0, D3D11)",
		limits:   d3d11Limits, discrete: discrete}
}

var windowsGPUs = []weighted[gpu]{
	{d3d11("Intel", "Intel(R) UHD Graphics 620", "5917", false), 9},
	{d3d11("Intel", "Intel(R) UHD Graphics 630", "3E92", false), 6},
	{d3d11("Intel", "Intel(R) Iris(R) Xe Graphics", "9A49", false), 10},
	{d3d11("Intel", "Intel(R) UHD Graphics", "9A78", false), 4},
	{d3d11("Intel", "Intel(R) UHD Graphics 770", "4680", false), 4},
	{d3d11("Intel", "Intel(R) HD Graphics 620", "5916", false), 4},
	{d3d11("Intel", "Intel(R) Arc(TM) Graphics", "7D55", false), 3},
	{d3d11("AMD", "AMD Radeon(TM) Graphics", "1638", false), 5},
	{d3d11("AMD", "AMD Radeon(TM) 780M", "15BF", false), 2},
	{d3d11("NVIDIA", "NVIDIA GeForce GTX 1650", "1F82", true), 6},
	{d3d11("NVIDIA", "NVIDIA GeForce GTX 1060 6GB", "1C03", true), 3},
	{d3d11("NVIDIA", "NVIDIA GeForce RTX 2060", "1F08", true), 3},
	{d3d11("NVIDIA", "NVIDIA GeForce RTX 3060", "2504", true), 6},
	{d3d11("NVIDIA", "NVIDIA GeForce RTX 3060 Laptop GPU", "2520", true), 4},
	{d3d11("NVIDIA", "NVIDIA GeForce RTX 3070", "2484", true), 3},
	{d3d11("NVIDIA", "NVIDIA GeForce RTX 4060", "2882", true), 5},
	{d3d11("NVIDIA", "NVIDIA GeForce RTX 4060 Laptop GPU", "28E0", true), 3},
	{d3d11("NVIDIA", "NVIDIA GeForce RTX 4070", "2786", true), 3},
	{d3d11("AMD", "AMD Radeon RX 580 2048SP", "6FDF", true), 2},
	{d3d11("AMD", "AMD Radeon RX 6600", "73FF", true), 3},
	{d3d11("AMD", "AMD Radeon RX 7600", "7480", true), 2},
}

// windowsFonts are the families every Windows 10 and 11 installation has.
var windowsFonts = []string{
	"Arial", "Arial Black", "Bahnschrift", "Calibri", "Cambria", "Cambria Math", "Candara", "Comic Sans MS",
	"Consolas", "Constantia", "Corbel", "Courier New", "Ebrima", "Franklin Gothic Medium", "Gabriola", "Gadugi",
	"Georgia", "HoloLens MDL2 Assets", "Impact", "Ink Free", "Javanese Text", "Leelawadee UI", "Leelawadee UI Semilight",
	"Lucida Console", "Lucida Sans Unicode", "Malgun Gothic", "Malgun Gothic Semilight", "Marlett", "Microsoft Himalaya",
	"Microsoft JhengHei", "Microsoft JhengHei UI", "Microsoft New Tai Lue", "Microsoft PhagsPa", "Microsoft Sans Serif",
	"Microsoft Tai Le", "Microsoft YaHei", "Microsoft YaHei UI", "Microsoft Yi Baiti", "MingLiU-ExtB", "Mongolian Baiti",
	"MS Gothic", "MS PGothic", "MS UI Gothic", "MV Boli", "Myanmar Text", "Nirmala UI", "Nirmala UI Semilight",
	"NSimSun", "Palatino Linotype", "PMingLiU-ExtB", "Segoe MDL2 Assets", "Segoe Print", "Segoe Script", "Segoe UI",
	"Segoe UI Black", "Segoe UI Emoji", "Segoe UI Historic", "Segoe UI Light", "Segoe UI Semibold", "Segoe UI Semilight",
	"Segoe UI Symbol", "SimSun", "SimSun-ExtB", "Sitka Banner", "Sitka Display", "Sitka Heading", "Sitka Small",
	"Sitka Subheading", "Sitka Text", "Sylfaen", "Symbol", "Tahoma", "Times New Roman", "Trebuchet MS", "Verdana",
	"Webdings", "Wingdings", "Yu Gothic", "Yu Gothic UI",
}

// windows11Fonts are the families Windows 11 adds.
var windows11Fonts = []string{
	"Cascadia Code", "Cascadia Mono", "Segoe Fluent Icons", "Segoe UI Variable Display", "Segoe UI Variable Small", "Segoe UI Variable Text",
}

// windowsOfficeFonts are the families Microsoft Office installs.
var windowsOfficeFonts = []string{
	"Agency FB", "Algerian", "Arial Narrow", "Arial Rounded MT Bold", "Baskerville Old Face", "Bauhaus 93", "Bell MT",
	"Berlin Sans FB", "Bernard MT Condensed", "Blackadder ITC", "Bodoni MT", "Book Antiqua", "Bookman Old Style",
	"Bookshelf Symbol 7", "Bradley Hand ITC", "Britannic Bold", "Broadway", "Brush Script MT", "Calisto MT", "Castellar",
	"Centaur", "Century", "Century Gothic", "Century Schoolbook", "Chiller", "Colonna MT", "Cooper Black",
	"Copperplate Gothic Bold", "Curlz MT", "Edwardian Script ITC", "Elephant", "Engravers MT", "Felix Titling",
	"Footlight MT Light", "Forte", "Freestyle Script", "French Script MT", "Garamond", "Gigi", "Gill Sans MT",
	"Goudy Old Style", "Haettenschweiler", "Harlow Solid Italic", "Harrington", "High Tower Text", "Imprint MT Shadow",
	"Informal Roman", "Jokerman", "Juice ITC", "Kristen ITC", "Kunstler Script", "Lucida Bright", "Lucida Calligraphy",
	"Lucida Fax", "Lucida Handwriting", "Lucida Sans", "Lucida Sans Typewriter", "Magneto", "Maiandra GD",
	"Matura MT Script Capitals", "Mistral", "Modern No. 20", "Monotype Corsiva", "MS Outlook", "MS Reference Sans Serif",
	"MS Reference Specialty", "MT Extra", "Niagara Engraved", "Old English Text MT", "Onyx", "Palace Script MT",
	"Papyrus", "Parchment", "Perpetua", "Playbill", "Poor Richard", "Pristina", "Rage Italic", "Ravie", "Rockwell",
	"Script MT Bold", "Showcard Gothic", "Snap ITC", "Stencil", "Tempus Sans ITC", "Tw Cen MT", "Viner Hand ITC",
	"Vivaldi", "Vladimir Script", "Wide Latin",
}

// windowsLanguageFonts are the supplemental families Windows installs
// with a language, by language.
var windowsLanguageFonts = map[string][]string{
	"ja": {"BIZ UDGothic", "BIZ UDMincho", "Meiryo", "Meiryo UI", "MS Mincho", "MS PMincho", "UD Digi Kyokasho N-R", "Yu Mincho"},
	"zh": {"DengXian", "FangSong", "KaiTi", "SimHei"},
	"ko": {"Batang", "BatangChe", "Dotum", "DotumChe", "Gulim", "GulimChe", "Gungsuh"},
	"hi": {"Aparajita", "Kokila", "Mangal", "Utsaah"},
}

// macChip is an Apple processor, the processor counts it comes with, and
// the Macs (and displays) it ships in.
type macChip struct {
	name   string
	cores  []int
	models []weighted[macModel]
}

// macModel is the display of a Mac: the built-in one of a laptop or an
// iMac (wide gamut: colorDepth 30), or an external one at the default
// scaled resolution of a Mac mini or Studio (24 bits unless Apple's own).
type macModel struct {
	width, height int
	notch         bool // the menu bar is taller around the camera housing
	colorDepth    int
	external      bool
}

var (
	air13M1   = macModel{1440, 900, false, 30, false}
	air13     = macModel{1470, 956, true, 30, false}
	air15     = macModel{1710, 1112, true, 30, false}
	pro14     = macModel{1512, 982, true, 30, false}
	pro16     = macModel{1728, 1117, true, 30, false}
	imac24    = macModel{2240, 1260, false, 30, false}
	display4K = macModel{1920, 1080, false, 24, true}
	scaled4K  = macModel{2560, 1440, false, 24, true}
	studio5K  = macModel{2560, 1440, false, 30, true}
)

var macChips = []weighted[macChip]{
	{macChip{"Apple M1", []int{8}, []weighted[macModel]{{air13M1, 70}, {imac24, 15}, {display4K, 10}, {studio5K, 5}}}, 22},
	{macChip{"Apple M1 Pro", []int{8, 10, 10}, []weighted[macModel]{{pro14, 70}, {pro16, 30}}}, 8},
	{macChip{"Apple M1 Max", []int{10}, []weighted[macModel]{{pro16, 50}, {pro14, 20}, {scaled4K, 15}, {studio5K, 15}}}, 3},
	{macChip{"Apple M2", []int{8}, []weighted[macModel]{{air13, 60}, {air15, 15}, {air13M1, 10}, {display4K, 10}, {scaled4K, 5}}}, 18},
	{macChip{"Apple M2 Pro", []int{10, 12}, []weighted[macModel]{{pro14, 55}, {pro16, 25}, {scaled4K, 10}, {studio5K, 10}}}, 5},
	{macChip{"Apple M2 Max", []int{12}, []weighted[macModel]{{pro16, 50}, {studio5K, 30}, {scaled4K, 20}}}, 2},
	{macChip{"Apple M3", []int{8}, []weighted[macModel]{{air13, 55}, {air15, 20}, {pro14, 15}, {imac24, 10}}}, 14},
	{macChip{"Apple M3 Pro", []int{11, 12}, []weighted[macModel]{{pro14, 65}, {pro16, 35}}}, 5},
	{macChip{"Apple M3 Max", []int{14, 16}, []weighted[macModel]{{pro16, 60}, {pro14, 40}}}, 2},
	{macChip{"Apple M4", []int{10}, []weighted[macModel]{{air13, 45}, {air15, 20}, {pro14, 10}, {imac24, 10}, {display4K, 10}, {scaled4K, 5}}}, 14},
	{macChip{"Apple M4 Pro", []int{12, 14}, []weighted[macModel]{{pro14, 50}, {pro16, 30}, {scaled4K, 10}, {studio5K, 10}}}, 5},
	{macChip{"Apple M4 Max", []int{14, 16}, []weighted[macModel]{{pro16, 60}, {pro14, 25}, {studio5K, 15}}}, 2},
}

// macVersions are Sec-CH-UA-Platform-Version on macOS (Chrome reports
// the real version there, while the user agent keeps 10_15_7).
var macVersions = []weighted[string]{
	{"14.7.8", 10}, {"15.6.1", 15}, {"15.7.1", 15}, {"26.0.1", 15}, {"26.1.0", 20}, {"26.2.0", 25},
}

// macFonts are the families every recent macOS has.
var macFonts = []string{
	"American Typewriter", "Andale Mono", "Apple Braille", "Apple Chancery", "Apple Color Emoji", "Apple SD Gothic Neo",
	"Apple Symbols", "AppleGothic", "AppleMyungjo", "Arial", "Arial Black", "Arial Hebrew", "Arial Narrow",
	"Arial Rounded MT Bold", "Arial Unicode MS", "Avenir", "Avenir Next", "Avenir Next Condensed", "Ayuthaya", "Baghdad",
	"Bangla MN", "Bangla Sangam MN", "Baskerville", "Beirut", "Big Caslon", "Bodoni 72", "Bodoni 72 Oldstyle",
	"Bodoni 72 Smallcaps", "Bodoni Ornaments", "Bradley Hand", "Brush Script MT", "Chalkboard", "Chalkboard SE",
	"Chalkduster", "Charter", "Cochin", "Comic Sans MS", "Copperplate", "Corsiva Hebrew", "Courier", "Courier New",
	"Damascus", "DecoType Naskh", "Devanagari MT", "Devanagari Sangam MN", "Didot", "DIN Alternate", "DIN Condensed",
	"Diwan Kufi", "Diwan Thuluth", "Euphemia UCAS", "Farah", "Farisi", "Futura", "Galvji", "Geeza Pro", "Geneva",
	"Georgia", "Gill Sans", "Gujarati MT", "Gujarati Sangam MN", "Gurmukhi MN", "Gurmukhi MT", "Heiti SC", "Heiti TC",
	"Helvetica", "Helvetica Neue", "Herculanum", "Hiragino Maru Gothic ProN", "Hiragino Mincho ProN", "Hiragino Sans",
	"Hiragino Sans GB", "Hoefler Text", "Impact", "InaiMathi", "Iowan Old Style", "ITF Devanagari", "Kailasa",
	"Kannada MN", "Kefa", "Khmer MN", "Kohinoor Bangla", "Kohinoor Devanagari", "Kohinoor Telugu", "Kokonor",
	"Krungthep", "KufiStandardGK", "Lao MN", "Lucida Grande", "Luminari", "Malayalam MN", "Marker Felt", "Menlo",
	"Microsoft Sans Serif", "Mishafi", "Monaco", "Mshtakan", "Muna", "Myanmar MN", "Nadeem", "New Peninim MT",
	"Noteworthy", "Noto Nastaliq Urdu", "Optima", "Oriya MN", "Palatino", "Papyrus", "Party LET", "Phosphate",
	"PingFang HK", "PingFang SC", "PingFang TC", "Plantagenet Cherokee", "PT Mono", "PT Sans", "PT Sans Caption",
	"PT Sans Narrow", "PT Serif", "PT Serif Caption", "Raanana", "Rockwell", "Sana", "Sathu", "Savoye LET",
	"Shree Devanagari 714", "SignPainter", "Silom", "Sinhala MN", "Skia", "Snell Roundhand", "Songti SC", "Songti TC",
	"STIXGeneral", "Sukhumvit Set", "Symbol", "Tahoma", "Tamil MN", "Telugu MN", "Thonburi", "Times", "Times New Roman",
	"Trattatello", "Trebuchet MS", "Verdana", "Waseem", "Webdings", "Wingdings", "Wingdings 2", "Wingdings 3",
	"Zapf Dingbats", "Zapfino",
}

// macOfficeFonts are the families Microsoft Office for Mac installs.
var macOfficeFonts = []string{
	"Abadi MT Condensed Extra Bold", "Bookman Old Style", "Calibri", "Calibri Light", "Cambria", "Cambria Math",
	"Candara", "Century", "Century Gothic", "Consolas", "Constantia", "Corbel", "Franklin Gothic Book",
	"Franklin Gothic Medium", "Gabriola", "Garamond", "Gill Sans MT", "Haettenschweiler", "Lucida Bright",
	"Lucida Sans", "Marlett", "Monotype Corsiva", "MS Reference Sans Serif", "MS Reference Specialty", "MT Extra",
	"Segoe UI", "Segoe UI Light", "Segoe UI Semibold", "Tw Cen MT",
}

// linuxKernel is a kernel as distributions ship it: Sec-CH-UA-Platform-
// Version (the release's leading numbers), uname's release, and the
// versions radeonsi reports with it.
type linuxKernel struct {
	version, release, llvm, drm string
	ubuntu                      int // percent of its installations that are Ubuntu's
}

var linuxKernels = []weighted[linuxKernel]{
	{linuxKernel{"6.8.0", "6.8.0-85-generic", "19.1.1", "3.57", 100}, 35},
	{linuxKernel{"6.14.0", "6.14.0-33-generic", "20.1.2", "3.61", 100}, 15},
	{linuxKernel{"6.12.48", "6.12.48+deb13-amd64", "19.1.7", "3.59", 0}, 15},
	{linuxKernel{"6.1.0", "6.1.0-40-amd64", "15.0.6", "3.49", 0}, 12},
	{linuxKernel{"6.16.8", "6.16.8-200.fc42.x86_64", "20.1.8", "3.63", 0}, 13},
	{linuxKernel{"5.15.0", "5.15.0-157-generic", "15.0.7", "3.42", 100}, 10},
}

var linuxScreens = []weighted[screenSize]{
	{screenSize{1920, 1080, 1}, 45}, {screenSize{2560, 1440, 1}, 15}, {screenSize{1920, 1200, 1}, 8},
	{screenSize{1366, 768, 1}, 8}, {screenSize{1600, 900, 1}, 5}, {screenSize{1920, 1080, 2}, 5},
	{screenSize{3440, 1440, 1}, 3}, {screenSize{1440, 900, 1}, 3}, {screenSize{3840, 2160, 1}, 3},
	{screenSize{2048, 1280, 1.25}, 3}, {screenSize{1280, 1024, 1}, 2},
}

// linuxDesktop is the panels a desktop keeps off the available area.
type linuxDesktop struct{ left, top, bottom int }

var linuxDesktops = []weighted[linuxDesktop]{
	{linuxDesktop{0, 32, 0}, 30},  // GNOME's top bar
	{linuxDesktop{64, 32, 0}, 25}, // Ubuntu's top bar and dock
	{linuxDesktop{0, 0, 44}, 20},  // KDE Plasma's panel
	{linuxDesktop{0, 0, 40}, 10},  // Cinnamon's panel
	{linuxDesktop{0, 28, 0}, 8},   // Xfce's top panel
	{linuxDesktop{0, 0, 0}, 7},    // a tiling window manager
}

// Limits that ANGLE's OpenGL back end reports on Linux, by driver.
var (
	mesaIntelLimits = &WebGL{
		MaxTextureSize: 16384, MaxRenderbufferSize: 16384, MaxViewportDims: [2]int{16384, 16384},
		MaxVertexAttribs: 16, MaxVertexUniformVectors: 4096, MaxFragmentUniformVectors: 1024, MaxVaryingVectors: 32,
		MaxCombinedTextureImageUnits: 32, MaxTextureImageUnits: 16, MaxVertexTextureImageUnits: 16,
		MaxCubeMapTextureSize: 16384, AliasedLineWidthRange: [2]float64{1, 7.375}, AliasedPointSizeRange: [2]float64{1, 255.875},
	}
	radeonsiLimits = &WebGL{
		MaxTextureSize: 16384, MaxRenderbufferSize: 16384, MaxViewportDims: [2]int{16384, 16384},
		MaxVertexAttribs: 16, MaxVertexUniformVectors: 4096, MaxFragmentUniformVectors: 1024, MaxVaryingVectors: 32,
		MaxCombinedTextureImageUnits: 32, MaxTextureImageUnits: 16, MaxVertexTextureImageUnits: 16,
		MaxCubeMapTextureSize: 16384, AliasedLineWidthRange: [2]float64{1, 2048}, AliasedPointSizeRange: [2]float64{1, 2048},
	}
	nvidiaGLLimits = &WebGL{
		MaxTextureSize: 32768, MaxRenderbufferSize: 32768, MaxViewportDims: [2]int{32768, 32768},
		MaxVertexAttribs: 16, MaxVertexUniformVectors: 4096, MaxFragmentUniformVectors: 1024, MaxVaryingVectors: 31,
		MaxCombinedTextureImageUnits: 32, MaxTextureImageUnits: 16, MaxVertexTextureImageUnits: 16,
		MaxCubeMapTextureSize: 32768, AliasedLineWidthRange: [2]float64{1, 10}, AliasedPointSizeRange: [2]float64{1, 2047},
	}
)

func mesaIntel(name string) gpu {
	return gpu{vendor: "Google Inc. (Intel)", renderer: "ANGLE (Intel, Mesa Intel(R) " + name + ", OpenGL 4.6)", limits: mesaIntelLimits}
}

// radeonsi's renderer names the kernel, LLVM and DRM versions, which
// linux() fills in.
func radeonsi(name, chip string, discrete bool) gpu {
	return gpu{vendor: "Google Inc. (AMD)",
		renderer: "ANGLE (AMD, " + name + " (radeonsi, " + chip + ", LLVM {llvm}, DRM {drm}, {kernel}), OpenGL 4.6)",
		limits:   radeonsiLimits, discrete: discrete}
}

func nvidiaGL(name string) gpu {
	return gpu{vendor: "Google Inc. (NVIDIA Corporation)", renderer: "ANGLE (NVIDIA Corporation, " + name + "/PCIe/SSE2, OpenGL 4.5.0)",
		limits: nvidiaGLLimits, discrete: true}
}

var linuxGPUs = []weighted[gpu]{
	{mesaIntel("UHD Graphics 620 (KBL GT2)"), 10},
	{mesaIntel("UHD Graphics 630 (CFL GT2)"), 7},
	{mesaIntel("Xe Graphics (TGL GT2)"), 10},
	{mesaIntel("UHD Graphics 770 (ADL-S GT1)"), 5},
	{mesaIntel("Graphics (RPL-P)"), 4},
	{mesaIntel("HD Graphics 620 (KBL GT2)"), 3},
	{radeonsi("AMD Radeon Graphics", "renoir", false), 6},
	{radeonsi("AMD Radeon 780M", "phoenix", false), 3},
	{radeonsi("AMD Radeon RX 580 Series", "polaris10", true), 4},
	{radeonsi("AMD Radeon RX 6600", "navi23", true), 5},
	{radeonsi("AMD Radeon RX 6700 XT", "navi22", true), 3},
	{radeonsi("AMD Radeon RX 7800 XT", "navi32", true), 2},
	{nvidiaGL("NVIDIA GeForce GTX 1650"), 6},
	{nvidiaGL("NVIDIA GeForce GTX 1060 6GB"), 3},
	{nvidiaGL("NVIDIA GeForce RTX 3060"), 7},
	{nvidiaGL("NVIDIA GeForce RTX 3070"), 3},
	{nvidiaGL("NVIDIA GeForce RTX 4060"), 4},
	{nvidiaGL("NVIDIA GeForce RTX 4070"), 3},
}

// linuxFonts are the families of a desktop installation of any of the
// common distributions.
var linuxFonts = []string{
	"DejaVu Sans", "DejaVu Sans Mono", "DejaVu Serif", "Liberation Mono", "Liberation Sans", "Liberation Sans Narrow",
	"Liberation Serif", "Noto Color Emoji", "Noto Mono", "Noto Sans", "Noto Sans Mono", "Noto Serif",
}

// phone is an Android phone: its model as client hints name it, its
// screen, GPU, memory as navigator.deviceMemory rounds it, the Android
// versions it runs, and the families its maker adds to Android's.
type phone struct {
	model         string
	width, height int
	ratio         float64
	gpu           gpu
	memory        float64
	versions      []string
	touch10       bool // reports 10 touch points rather than 5
	fonts         []string
}

// Limits of the GPUs of phones, as Chrome on Android reports them.
var (
	adrenoLimits = &WebGL{
		MaxTextureSize: 16384, MaxRenderbufferSize: 16384, MaxViewportDims: [2]int{16384, 16384},
		MaxVertexAttribs: 32, MaxVertexUniformVectors: 256, MaxFragmentUniformVectors: 256, MaxVaryingVectors: 31,
		MaxCombinedTextureImageUnits: 32, MaxTextureImageUnits: 16, MaxVertexTextureImageUnits: 16,
		MaxCubeMapTextureSize: 16384, AliasedLineWidthRange: [2]float64{1, 8}, AliasedPointSizeRange: [2]float64{1, 1023},
	}
	maliLimits = &WebGL{
		MaxTextureSize: 16384, MaxRenderbufferSize: 16384, MaxViewportDims: [2]int{16384, 16384},
		MaxVertexAttribs: 16, MaxVertexUniformVectors: 1024, MaxFragmentUniformVectors: 1024, MaxVaryingVectors: 31,
		MaxCombinedTextureImageUnits: 96, MaxTextureImageUnits: 16, MaxVertexTextureImageUnits: 16,
		MaxCubeMapTextureSize: 16384, AliasedLineWidthRange: [2]float64{1, 8}, AliasedPointSizeRange: [2]float64{1, 1024},
	}
)

func adreno(n string) gpu {
	return gpu{vendor: "Qualcomm", renderer: "Adreno (TM) " + n, limits: adrenoLimits}
}
func mali(n string) gpu { return gpu{vendor: "ARM", renderer: "Mali-" + n, limits: maliLimits} }

var (
	pixelFonts   = []string{"Google Sans", "Google Sans Text"}
	samsungFonts = []string{"SamsungOne", "Samsung Sans"}
	xiaomiFonts  = []string{"MiSans"}
	oneplusFonts = []string{"OnePlus Sans"}
)

var phones = []weighted[phone]{
	{phone{"Pixel 8", 412, 915, 2.625, mali("G715"), 8, []string{"14.0.0", "15.0.0", "16.0.0"}, false, pixelFonts}, 9},
	{phone{"Pixel 8 Pro", 448, 998, 3, mali("G715"), 8, []string{"14.0.0", "15.0.0", "16.0.0"}, false, pixelFonts}, 4},
	{phone{"Pixel 9", 412, 923, 2.625, mali("G715"), 8, []string{"15.0.0", "16.0.0"}, false, pixelFonts}, 7},
	{phone{"Pixel 7", 412, 915, 2.625, mali("G710"), 8, []string{"14.0.0", "15.0.0", "16.0.0"}, false, pixelFonts}, 7},
	{phone{"Pixel 7a", 412, 915, 2.625, mali("G710"), 8, []string{"14.0.0", "15.0.0", "16.0.0"}, false, pixelFonts}, 6},
	{phone{"Pixel 6a", 412, 915, 2.625, mali("G78"), 4, []string{"14.0.0", "15.0.0", "16.0.0"}, false, pixelFonts}, 4},
	{phone{"SM-S911B", 360, 780, 3, adreno("740"), 8, []string{"14.0.0", "15.0.0"}, false, samsungFonts}, 8},
	{phone{"SM-S918B", 384, 824, 2.8125, adreno("740"), 8, []string{"14.0.0", "15.0.0"}, false, samsungFonts}, 6},
	{phone{"SM-S921U", 360, 780, 3, adreno("750"), 8, []string{"14.0.0", "15.0.0", "16.0.0"}, false, samsungFonts}, 7},
	{phone{"SM-A546B", 384, 854, 2.8125, mali("G68"), 4, []string{"14.0.0", "15.0.0"}, false, samsungFonts}, 9},
	{phone{"SM-A536B", 412, 915, 2.625, mali("G68"), 4, []string{"13.0.0", "14.0.0"}, false, samsungFonts}, 6},
	{phone{"23021RAAEG", 393, 873, 2.75, adreno("610"), 4, []string{"13.0.0", "14.0.0"}, true, xiaomiFonts}, 8},
	{phone{"CPH2449", 412, 919, 3.5, adreno("740"), 8, []string{"14.0.0", "15.0.0"}, true, oneplusFonts}, 4},
	{phone{"moto g54 5G", 393, 873, 2.75, mali("G57 MC2"), 4, []string{"13.0.0", "14.0.0"}, false, nil}, 5},
}

// androidFonts are the families of Android's own font configuration.
var androidFonts = []string{
	"Carrois Gothic SC", "Coming Soon", "Cutive Mono", "Dancing Script", "Droid Sans Mono", "Noto Color Emoji",
	"Noto Naskh Arabic", "Noto Sans", "Noto Sans CJK JP", "Noto Sans CJK KR", "Noto Sans CJK SC", "Noto Sans CJK TC",
	"Noto Sans Devanagari", "Noto Sans Hebrew", "Noto Sans Thai", "Noto Serif", "Roboto", "Roboto Flex",
	"Source Sans Pro",
}
