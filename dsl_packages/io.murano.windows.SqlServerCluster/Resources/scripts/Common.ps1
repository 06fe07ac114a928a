# Helpers shared by every plan of the io.murano.windows packages.
#
# Logging never records parameter values: the plans carry passwords, so only
# messages written by the scripts themselves reach the log.

$ErrorActionPreference = 'Stop'
Set-StrictMode -Version 2.0

$script:MuranoLogFile = Join-Path $env:SystemDrive 'Murano\Logs\plans.log'

function Write-MuranoLog {
    param([Parameter(Mandatory = $true)][string]$Message)
    $folder = Split-Path -Parent $script:MuranoLogFile
    if (-not (Test-Path -LiteralPath $folder)) {
        New-Item -ItemType Directory -Path $folder -Force | Out-Null
    }
    $line = '{0:u} [{1}] {2}' -f (Get-Date), $PID, $Message
    Add-Content -LiteralPath $script:MuranoLogFile -Value $line
}

function ConvertTo-PlainSecureString {
    param([Parameter(Mandatory = $true)][string]$Text)
    return ConvertTo-SecureString -String $Text -AsPlainText -Force
}

function New-DomainCredential {
    param(
        [Parameter(Mandatory = $true)][string]$DomainName,
        [Parameter(Mandatory = $true)][string]$UserName,
        [Parameter(Mandatory = $true)][string]$Password
    )
    $netbios = ($DomainName -split '\.')[0]
    $secure = ConvertTo-PlainSecureString -Text $Password
    return New-Object System.Management.Automation.PSCredential("$netbios\$UserName", $secure)
}

function Wait-Until {
    param(
        [Parameter(Mandatory = $true)][scriptblock]$Condition,
        [Parameter(Mandatory = $true)][string]$What,
        [int]$TimeoutSeconds = 900,
        [int]$IntervalSeconds = 10
    )
    $deadline = (Get-Date).AddSeconds($TimeoutSeconds)
    while ($true) {
        try {
            if (& $Condition) { return }
        } catch {
            Write-MuranoLog "Still waiting for $What ($($_.Exception.GetType().Name))"
        }
        if ((Get-Date) -gt $deadline) {
            throw "Timed out after $TimeoutSeconds s waiting for $What"
        }
        Start-Sleep -Seconds $IntervalSeconds
    }
}

function Install-FeatureIfMissing {
    param([Parameter(Mandatory = $true)][string[]]$Name)
    $missing = @(Get-WindowsFeature -Name $Name | Where-Object { -not $_.Installed } |
        ForEach-Object { $_.Name })
    if ($missing.Count -eq 0) { return $false }
    Write-MuranoLog "Installing Windows features: $($missing -join ', ')"
    $result = Install-WindowsFeature -Name $missing -IncludeManagementTools
    if (-not $result.Success) {
        throw "Installing Windows features $($missing -join ', ') failed"
    }
    return [bool]($result.RestartNeeded -eq 'Yes')
}

function Get-HostState {
    $system = Get-CimInstance -ClassName Win32_ComputerSystem
    $os = Get-CimInstance -ClassName Win32_OperatingSystem
    return @{
        ComputerName = $env:COMPUTERNAME
        Domain = $system.Domain
        PartOfDomain = [bool]$system.PartOfDomain
        DomainRole = [int]$system.DomainRole
        LastBootUpTime = $os.LastBootUpTime.ToString('u')
    }
}
